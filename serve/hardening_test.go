package serve

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/tegrl/tegrl/env"
)

// committedPolicies are the learned policies the repository ships: an MLP
// (small), a GNN (small-gnn) and a distilled student (student-gnn).
var committedPolicies = []string{
	"../docs/policies/small.safetensors",
	"../docs/policies/small-gnn.safetensors",
	"../docs/policies/student-gnn.safetensors",
}

// TestShrinkClusterWithLearnedPolicy: with a learned policy serving, a
// full state update that shrinks the cluster from 1000 to 300 machines
// (both above the sparse observation's 256-machine threshold) leaves the
// service deciding: the next decisions answer 200 on machines of the new
// cluster, and the model's lock is free (a delta and /readyz answer).
func TestShrinkClusterWithLearnedPolicy(t *testing.T) {
	for _, pol := range []string{committedPolicies[2], committedPolicies[0]} {
		s := newTestService(t, Config{Cluster: testCluster(t, 1000), Arms: []ArmConfig{{Name: "a", Spec: pol, Weight: 1}}})
		h := s.Handler()
		job := DecideRequest{Key: "ns/p", Job: JobJSON{CPUMilli: 1000, MemMiB: 1024}}
		if code, b := call(t, h, "POST", "/v1/decide", job); code != http.StatusOK {
			t.Fatalf("%s: decide on 1000 machines: %d %s", pol, code, b)
		}
		small := machinesJSON(testCluster(t, 300))
		if code, b := call(t, h, "POST", "/v1/state", StateRequest{Machines: small}); code != http.StatusOK {
			t.Fatalf("%s: shrink to 300: %d %s", pol, code, b)
		}
		for k := 0; k < 2; k++ {
			code, b := call(t, h, "POST", "/v1/decide", job)
			if code != http.StatusOK {
				t.Fatalf("%s: decision %d after the shrink: %d %s", pol, k, code, b)
			}
			if d := decodeBody[DecideResponse](t, b); d.Action.MachineIndex >= 300 {
				t.Fatalf("%s: decision names machine %d of 300", pol, d.Action.MachineIndex)
			}
		}
		if code, b := call(t, h, "POST", "/v1/state", StateRequest{TimeS: f64(10)}); code != http.StatusOK {
			t.Errorf("%s: delta after the shrink: %d %s", pol, code, b)
		}
		if code, _ := call(t, h, "GET", "/readyz", nil); code != http.StatusOK {
			t.Errorf("%s: readyz after the shrink: %d", pol, code)
		}
	}
}

// panicSched is a scheduler that panics on every decision.
type panicSched struct{}

func (panicSched) Name() string { return "panic" }
func (panicSched) Decide(*env.Observation, *rand.Rand) env.Action {
	panic("scheduler bug")
}

// TestSchedulerPanicAnswers500: a scheduler that panics answers 500 for
// that request (prioritize: zero scores, the reason in a header); the
// model's lock is released, the model unchanged, and the next requests
// are served once a good policy serves again.
func TestSchedulerPanicAnswers500(t *testing.T) {
	s := newTestService(t, Config{})
	h := s.Handler()
	a := s.router.arms[0]
	good := a.cur.Load()
	a.cur.Store(&Policy{Version: "panic", Source: "test", sched: panicSched{}})
	running := s.model.live.Running()
	code, b := call(t, h, "POST", "/v1/decide", DecideRequest{Key: "k", Job: JobJSON{CPUMilli: 1000, MemMiB: 1024}})
	if code != http.StatusInternalServerError || !strings.Contains(string(b), "scheduler bug") {
		t.Fatalf("decide with a panicking scheduler: %d %s", code, b)
	}
	names := []string{s.model.live.Cluster().Machines[0].Name}
	code, b = call(t, h, "POST", "/prioritize", extenderv1.ExtenderArgs{Pod: testPod("p", "1", "1Gi", 0, nil), NodeNames: &names})
	if code != http.StatusOK || string(b) != `[{"Host":"`+names[0]+`","Score":0}]`+"\n" {
		t.Fatalf("prioritize with a panicking scheduler: %d %s", code, b)
	}
	if got := testutil.ToFloat64(s.met.panics.WithLabelValues("decide")); got != 1 {
		t.Errorf("panics counted for decide: %v, want 1", got)
	}
	a.cur.Store(good)
	if code, b := call(t, h, "POST", "/v1/state", StateRequest{TimeS: f64(10)}); code != http.StatusOK {
		t.Fatalf("state after the panic: %d %s", code, b)
	}
	if code, b := call(t, h, "POST", "/v1/decide", DecideRequest{Key: "k", Job: JobJSON{CPUMilli: 1000, MemMiB: 1024}}); code != http.StatusOK {
		t.Fatalf("decide after the panic: %d %s", code, b)
	}
	if s.model.live.Running() != running {
		t.Errorf("running jobs %d, want %d", s.model.live.Running(), running)
	}
}

// TestRolesAndTokens: with tokens, every endpoint asks for its role's
// token (or a higher role's), compared whatever the scheme's case;
// anonymous and wrong-role writes are refused and change nothing.
func TestRolesAndTokens(t *testing.T) {
	s := newTestService(t, Config{ReadToken: "rtok", WriteToken: "wtok", AdminToken: "atok"})
	h := s.Handler()
	state := StateRequest{Started: []StartedJSON{{Key: "ns/x", Machine: "m000001", Job: JobJSON{CPUMilli: 100, MemMiB: 100}}}}
	decide := DecideRequest{Key: "k", Job: JobJSON{CPUMilli: 100, MemMiB: 100}}
	for _, tc := range []struct {
		method, path string
		body         any
		auth         string
		code         int
	}{
		{"POST", "/v1/state", StateRequest{TimeS: f64(1e9)}, "", 401},
		{"POST", "/v1/state", StateRequest{TimeS: f64(1e9)}, "Bearer rtok", 401},
		{"POST", "/v1/state", StateRequest{TimeS: f64(1e9)}, "Bearer wtok2", 401},
		{"POST", "/v1/state", StateRequest{TimeS: f64(1e9)}, "Basic wtok", 401},
		{"POST", "/v1/state", StateRequest{TimeS: f64(1e9)}, "Bearer", 401},
		{"POST", "/v1/outcome", `{"decision_id":"x","reward":1}`, "", 401},
		{"POST", "/v1/decide", decide, "", 401},
		{"POST", "/filter", "{}", "", 401},
		{"POST", "/prioritize", "{}", "", 401},
		{"GET", "/v1/ab", nil, "Bearer wtok", 401},
		{"GET", "/v1/policies", nil, "", 401},
		{"POST", "/v1/policies", "x", "Bearer wtok", 401},
		{"POST", "/v1/decide", decide, "Bearer rtok", 200},
		{"POST", "/v1/decide", decide, "bearer wtok", 200},
		{"POST", "/v1/decide", decide, "  BEARER   atok  ", 200},
		{"POST", "/v1/state", state, "bEaReR wtok", 200},
		{"POST", "/v1/state", StateRequest{TimeS: f64(10)}, "Bearer atok", 200},
		{"GET", "/v1/ab", nil, "Bearer atok", 200},
		{"GET", "/healthz", nil, "", 200},
		{"GET", "/metrics", nil, "", 200},
	} {
		var hdr []string
		if tc.auth != "" {
			hdr = []string{"Authorization", tc.auth}
		}
		if code, b := call(t, h, tc.method, tc.path, tc.body, hdr...); code != tc.code {
			t.Errorf("%s %s with %q: %d %s, want %d", tc.method, tc.path, tc.auth, code, b, tc.code)
		}
	}
	if now := s.model.live.Now(); now != 10 {
		t.Errorf("model time %v: a refused write moved the clock", now)
	}
	if got := testutil.ToFloat64(s.met.authFailed.WithLabelValues("write")); got != 6 {
		t.Errorf("refused writes counted %v, want 6", got)
	}
	// A verified client certificate stands for the read and write tokens,
	// not for the admin token.
	for _, tc := range []struct {
		path string
		body any
		code int
	}{{"/v1/state", StateRequest{TimeS: f64(20)}, 200}, {"/v1/decide", decide, 200}, {"/v1/policies", "x", 401}} {
		req := httptest.NewRequest("POST", tc.path, bytes.NewReader(mustJSON(t, tc.body)))
		req.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{}}}}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.code {
			t.Errorf("%s with a verified client certificate: %d %s, want %d", tc.path, rec.Code, rec.Body.Bytes(), tc.code)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	if s, ok := v.(string); ok {
		return []byte(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCheckExposure: a non-loopback address needs the read and write
// tokens (or the explicit insecure switch); loopback does not.
func TestCheckExposure(t *testing.T) {
	open, closed := &Config{}, &Config{ReadToken: "r", WriteToken: "w"}
	for _, tc := range []struct {
		addr     string
		cfg      *Config
		insecure bool
		ok       bool
	}{
		{"127.0.0.1:8080", open, false, true},
		{"[::1]:8080", open, false, true},
		{"localhost:0", open, false, true},
		{"0.0.0.0:8080", open, false, false},
		{":8080", open, false, false},
		{"10.1.2.3:8080", &Config{WriteToken: "w"}, false, false},
		{"10.1.2.3:8080", &Config{ReadToken: "r"}, false, false},
		{"10.1.2.3:8080", closed, false, true},
		{"0.0.0.0:8080", open, true, true},
		{"0.0.0.0:8080", &Config{TLS: &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert}}, false, true},
		{"0.0.0.0:8080", &Config{TLS: &tls.Config{}}, false, false},
	} {
		err := CheckExposure(tc.addr, tc.cfg, tc.insecure)
		if (err == nil) != tc.ok {
			t.Errorf("CheckExposure(%q, read %q write %q, insecure %v): %v", tc.addr, tc.cfg.ReadToken, tc.cfg.WriteToken, tc.insecure, err)
		}
	}
}

// TestReadToken: a token file's first line, trimmed; else the variable.
func TestReadToken(t *testing.T) {
	path := t.TempDir() + "/tok"
	os.WriteFile(path, []byte("  s3cret \nsecond line\n"), 0o600)
	t.Setenv("TEGRL_TEST_TOKEN", " fromenv ")
	if tok, err := ReadToken(path, "TEGRL_TEST_TOKEN"); err != nil || tok != "s3cret" {
		t.Errorf("from file: %q %v", tok, err)
	}
	if tok, err := ReadToken("", "TEGRL_TEST_TOKEN"); err != nil || tok != "fromenv" {
		t.Errorf("from the environment: %q %v", tok, err)
	}
	os.WriteFile(path, []byte("\n"), 0o600)
	if _, err := ReadToken(path, ""); err == nil {
		t.Error("an empty token file is accepted")
	}
	if _, err := ReadToken(path+".missing", ""); err == nil {
		t.Error("a missing token file is accepted")
	}
}

// TestTimedOutRequestCommitsNothing: a state update (delta or full) and a
// policy upload that are answered 503 because their deadline passed never
// apply, not even when what held them up lets go later.
func TestTimedOutRequestCommitsNothing(t *testing.T) {
	s := newTestService(t, Config{RequestTimeout: 100 * time.Millisecond, AdminToken: adminToken})
	h := s.Handler()
	before := armVersion(s)
	s.mu.Lock() // a long decision holds the model
	code, b := call(t, h, "POST", "/v1/state", StateRequest{Started: []StartedJSON{{Key: "late", Machine: "m000002", Job: JobJSON{CPUMilli: 100, MemMiB: 100}}}})
	if code != http.StatusServiceUnavailable {
		t.Errorf("delta behind a held model: %d %s, want 503", code, b)
	}
	code, b = call(t, h, "POST", "/v1/state", StateRequest{Machines: machinesJSON(testCluster(t, 10))})
	if code != http.StatusServiceUnavailable {
		t.Errorf("full update behind a held model: %d %s, want 503", code, b)
	}
	s.mu.Unlock()
	s.canary.mu.Lock() // a slow validation
	code, b = call(t, h, "POST", "/v1/policies?name=late", policyPayload(t, 7, nil), bearer(adminToken)...)
	if code != http.StatusServiceUnavailable {
		t.Errorf("policy upload past its deadline: %d %s, want 503", code, b)
	}
	s.canary.mu.Unlock()
	time.Sleep(300 * time.Millisecond) // what the abandoned requests would do, they have done by now
	s.mu.Lock()
	machines, running := len(s.model.live.Cluster().Machines), s.model.live.Running()
	s.mu.Unlock()
	if machines != 64 || running != 0 {
		t.Errorf("after two 503s the model has %d machines and %d running jobs, want 64 and 0", machines, running)
	}
	if v := armVersion(s); v != before {
		t.Errorf("an upload answered 503 serves: %s, want %s", v, before)
	}
	ev := s.Policies().Events
	if last := ev[len(ev)-1]; last.Accepted || last.Reason != reasonCancelled || last.Name != "late" {
		t.Errorf("last policy event %+v, want the cancelled upload", last)
	}
}

// TestRewardsBounded: rewards beyond ±MaxReward (1e308 among them) are
// refused; bounded ones keep the A/B summary and the reward gauge finite.
func TestRewardsBounded(t *testing.T) {
	s := newTestService(t, Config{})
	h := s.Handler()
	var ids []string
	for k := 0; k < 4; k++ {
		_, b := call(t, h, "POST", "/v1/decide", DecideRequest{Key: fmt.Sprint("k", k), Job: JobJSON{CPUMilli: 100, MemMiB: 100}})
		ids = append(ids, decodeBody[DecideResponse](t, b).DecisionID)
	}
	for _, r := range []string{"1e308", "-1e308", "1.0000001e9"} {
		if code, b := call(t, h, "POST", "/v1/outcome", `{"decision_id":"`+ids[0]+`","reward":`+r+`}`); code != http.StatusBadRequest {
			t.Errorf("reward %s: %d %s, want 400", r, code, b)
		}
	}
	for _, id := range ids[:3] {
		if code, b := call(t, h, "POST", "/v1/outcome", OutcomeRequest{DecisionID: id, Reward: f64(MaxReward)}); code != http.StatusOK {
			t.Fatalf("reward 1e9: %d %s", code, b)
		}
	}
	code, b := call(t, h, "GET", "/v1/ab", nil)
	sum := decodeBody[ABSummary](t, b)
	if code != http.StatusOK || sum.Arms[0].RewardMean == nil || *sum.Arms[0].RewardMean != MaxReward || sum.Arms[0].RewardN != 3 {
		t.Errorf("A/B summary: %d %s", code, b)
	}
	if got := testutil.ToFloat64(s.met.rewardMean.WithLabelValues("a")); got != MaxReward {
		t.Errorf("reward mean gauge %v", got)
	}
	// The summary drops a statistic that overflowed rather than the body.
	a := s.router.arms[0]
	a.mu.Lock()
	a.st.rewardSumSq = math.Inf(1)
	a.mu.Unlock()
	if code, b := call(t, h, "GET", "/v1/ab", nil); code != http.StatusOK || decodeBody[ABSummary](t, b).Arms[0].RewardStd != nil {
		t.Errorf("A/B summary with an infinite sum of squares: %d %s", code, b)
	}
}

// TestDecisionIDs: ids are 128 random bits (two services with the same
// seed issue different ones); an outcome is accepted once, for an id this
// service issued, among its last DecisionLog decisions and within
// DecisionTTL.
func TestDecisionIDs(t *testing.T) {
	first := func(s *Service) string {
		_, b := call(t, s.Handler(), "POST", "/v1/decide", DecideRequest{Key: "k", Job: JobJSON{CPUMilli: 100, MemMiB: 100}})
		return decodeBody[DecideResponse](t, b).DecisionID
	}
	s1 := newTestService(t, Config{Seed: 1, DecisionLog: 2, DecisionTTL: time.Hour})
	s2 := newTestService(t, Config{Seed: 1})
	id1, id2 := first(s1), first(s2)
	if id1 == id2 || len(id1) != 32 {
		t.Fatalf("first ids of two services with seed 1: %s %s", id1, id2)
	}
	h := s1.Handler()
	outcome := func(id string) int {
		code, _ := call(t, h, "POST", "/v1/outcome", OutcomeRequest{DecisionID: id, Success: new(true)})
		return code
	}
	flip := []byte(id1)
	flip[31] ^= 1
	if outcome(string(flip)) != 400 || outcome(id2) != 400 || outcome(strings.ToUpper(id1)+"0") != 400 {
		t.Error("an id this service never issued is accepted")
	}
	if outcome(id1) != 200 || outcome(id1) != 400 {
		t.Error("an outcome is not accepted exactly once")
	}
	a, b, c := first(s1), first(s1), first(s1) // a ring of 2: a is forgotten
	if outcome(a) != 400 || outcome(c) != 200 {
		t.Error("the decision log does not forget its oldest decision")
	}
	now := time.Now()
	s1.decided.now = func() time.Time { return now.Add(2 * time.Hour) }
	if outcome(b) != 400 {
		t.Error("an outcome past the TTL is accepted")
	}
}

// TestSlowBodyAndReadyz: a client that sends its body slowly is answered
// at the request deadline and its connection closed, not held until the
// server's read timeout; /readyz answers while the model is busy.
func TestSlowBodyAndReadyz(t *testing.T) {
	s := newTestService(t, Config{RequestTimeout: 300 * time.Millisecond})
	url := serveBackground(t, s)
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/state HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"time_s\":")
	conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	start := time.Now()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a slow body within 3 s: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("slow body: %d, want 503 or 408", resp.StatusCode)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("slow body answered after %v", took)
	}
	s.mu.Lock()
	done := make(chan int, 1)
	go func() {
		r, err := http.Get(url + "/readyz")
		if err != nil {
			done <- -1
			return
		}
		r.Body.Close()
		done <- r.StatusCode
	}()
	select {
	case code := <-done:
		if code != http.StatusOK {
			t.Errorf("readyz while the model is busy: %d", code)
		}
	case <-time.After(2 * time.Second):
		t.Error("readyz waits for the model's lock")
	}
	s.mu.Unlock()
}

// TestRackPowerBudget: a rack's power budget set through /v1/state lets
// an 8-GPU pod onto an idle 8-GPU machine that the default budget (0.8 of
// the rack's peak) refuses: the barrier keeps the pod's dynamic power
// under α of the rack's headroom.
func TestRackPowerBudget(t *testing.T) {
	s, err := New(Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	ms := []MachineJSON{{Name: "g8", CPUMilli: 96000, MemMiB: 1 << 20, GPUs: 8, GPUModel: "A100", Rack: "r1", IdleW: 1000, PeakW: 6000},
		{Name: "c", CPUMilli: 32000, MemMiB: 1 << 17, Rack: "r2"}}
	pod := testPod("train", "8", "64Gi", 8, nil)
	names := []string{"g8"}
	filter := func() extenderv1.ExtenderFilterResult {
		_, b := call(t, h, "POST", "/filter", extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names})
		return decodeBody[extenderv1.ExtenderFilterResult](t, b)
	}
	if code, b := call(t, h, "POST", "/v1/state", StateRequest{Machines: ms}); code != http.StatusOK {
		t.Fatalf("state: %d %s", code, b)
	}
	if fr := filter(); fr.FailedNodes["g8"] != reasonSafety {
		t.Fatalf("8 GPUs under the default budget: %+v, want the safety layer's refusal", fr)
	}
	code, b := call(t, h, "POST", "/v1/state", StateRequest{Machines: ms, Racks: []RackJSON{{Name: "r1", PowerBudgetW: f64(20000), UplinkGbps: f64(400)}}})
	if code != http.StatusOK {
		t.Fatalf("state with racks: %d %s", code, b)
	}
	if fr := filter(); fr.NodeNames == nil || len(*fr.NodeNames) != 1 || len(fr.FailedNodes) != 0 {
		t.Errorf("8 GPUs under a 20 kW budget: %+v", fr)
	}
	s.mu.Lock()
	rk := s.model.live.Cluster().Racks[0]
	s.mu.Unlock()
	if rk.Name != "r1" || rk.PowerBudgetW != 20000 || rk.UplinkGbps != 400 {
		t.Errorf("rack %+v", rk)
	}
	for _, tc := range []struct{ racks, want string }{
		{`[{"name":"nope","power_budget_w":1}]`, `racks[0].name: no machine is in rack "nope"`},
		{`[{"name":"r1","power_budget_w":0}]`, "racks[0].power_budget_w: 0 must be > 0"},
		{`[{"name":"r1","uplink_gbps":-1}]`, "racks[0].uplink_gbps: -1"},
		{`[{"name":"r1"},{"name":"r1"}]`, `racks[1].name: rack "r1" listed twice`},
	} {
		body := `{"machines":[{"name":"a","cpu_milli":1,"mem_mib":1,"rack":"r1"}],"racks":` + tc.racks + `}`
		if code, b := call(t, h, "POST", "/v1/state", body); code != http.StatusBadRequest || !strings.Contains(decodeBody[apiError](t, b).Error, tc.want) {
			t.Errorf("racks %s: %d %s, want 400 with %q", tc.racks, code, b, tc.want)
		}
	}
	if code, b := call(t, h, "POST", "/v1/state", `{"racks":[{"name":"r1","power_budget_w":1}]}`); code != http.StatusBadRequest {
		t.Errorf("racks without machines: %d %s", code, b)
	}
}

// TestStateLimits: a full update over MaxMachines and numbers beyond
// their bounds are refused before anything applies.
func TestStateLimits(t *testing.T) {
	s := newTestService(t, Config{MaxMachines: 100})
	h := s.Handler()
	if code, b := call(t, h, "POST", "/v1/state", StateRequest{Machines: machinesJSON(testCluster(t, 101))}); code != http.StatusBadRequest || !strings.Contains(string(b), "more than the limit of 100") {
		t.Errorf("101 machines: %d %s", code, b)
	}
	for _, body := range []string{`{"time_s":1e308}`, `{"time_s":1.1e10}`,
		`{"started":[{"key":"x","machine":"m000001","job":{"cpu_milli":1,"mem_mib":1,"duration_s":1e300}}]}`,
		`{"started":[{"key":"x","machine":"m000001","job":{"cpu_milli":1,"mem_mib":1},"usage":{"cpu_ratio":1e9,"mem_ratio":0}}]}`,
		`{"machines":[{"name":"a","cpu_milli":1,"mem_mib":1,"idle_w":1,"peak_w":1e300}]}`,
	} {
		if code, b := call(t, h, "POST", "/v1/state", body); code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", body, code, b)
		}
	}
	big := bytes.Repeat([]byte(" "), maxSmallBody+1)
	if code, b := call(t, h, "POST", "/v1/decide", append(big, []byte(`{"key":"k","job":{"cpu_milli":1,"mem_mib":1}}`)...)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a 64 KiB decision body: %d %s", code, b)
	}
	if s.model.live.Now() != 0 || len(s.model.live.Cluster().Machines) != 64 {
		t.Error("refused updates changed the model")
	}
}

// TestMetricsLint: the exposition passes client_golang's linter (and
// promtool's check when promtool is installed) with every series present,
// outcomes included; request buckets reach the 10 s deadline and policy
// uploads have their own histogram.
func TestMetricsLint(t *testing.T) {
	s := newTestService(t, Config{AdminToken: adminToken})
	h := s.Handler()
	_, b := call(t, h, "POST", "/v1/decide", DecideRequest{Key: "k", Job: JobJSON{CPUMilli: 100, MemMiB: 100}})
	call(t, h, "POST", "/v1/outcome", OutcomeRequest{DecisionID: decodeBody[DecideResponse](t, b).DecisionID, Reward: f64(1)})
	call(t, h, "POST", "/v1/policies?arm=a&name=p", policyPayload(t, 1, nil), bearer(adminToken)...)
	call(t, h, "POST", "/v1/state", StateRequest{TimeS: f64(10)}, bearer("wrong")...)
	problems, err := testutil.CollectAndLint(s.Metrics())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	_, body := call(t, h, "GET", "/metrics", nil)
	for _, want := range []string{
		`tegrl_serve_request_seconds_bucket{handler="decide",le="10.48576"} 1`,
		`tegrl_serve_policy_load_seconds_count{result="accepted"} 1`,
		`tegrl_serve_ab_reward_mean{arm="a"} 1`,
	} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if bytes.Contains(body, []byte(`tegrl_serve_request_seconds_count{handler="policy_load"}`)) {
		t.Error("policy uploads are timed in the request histogram")
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool not installed: its check skipped")
		return
	}
	cmd := exec.CommandContext(context.Background(), promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
