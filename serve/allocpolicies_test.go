package serve

import (
	"cmp"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/rl/transport"
)

// gavelMulti is the committed learned policy of the multi-GPU Gavel mix.
const gavelMulti = "../docs/policies/gavel-multi.json"

// writePolicy writes weights as a scored policy file and returns its path
// and SHA-256.
func writePolicy(t testing.TB, dir, name string, w []float64) (string, string) {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := env.WriteScoredPolicy(path, w, nil); err != nil {
		t.Fatal(err)
	}
	return path, fileSHA(t, path)
}

func fileSHA(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// stickyWeights score bias 1, log_rel_thr 1 and same_type 5: a job keeps
// the type it ran on even when another is faster.
func stickyWeights() []float64 {
	w := make([]float64, env.NumScoredFeatures)
	w[0], w[4], w[5] = 1, 1, 5
	return w
}

// allocCall posts req to h with the read token and decodes the answer.
func allocCall(t testing.TB, h http.Handler, req AllocateRequest) AllocateResponse {
	t.Helper()
	code, b := call(t, h, "POST", "/v1/allocate", req, "Authorization", "Bearer r")
	if code != http.StatusOK {
		t.Fatalf("allocate: %d %s", code, b)
	}
	return decodeBody[AllocateResponse](t, b)
}

// TestAllocLearnedMatchesEnv: the API's answer by a learned policy is
// exactly env.ScoredPolicy's on the same round with the same previous
// types, and names the file's SHA-256.
func TestAllocLearnedMatchesEnv(t *testing.T) {
	s := newTestService(t, Config{ReadToken: "r", AdminToken: "a", AllocationPolicies: map[string]string{"gavel": gavelMulti}})
	req := allocReq()
	req.Policy = "gavel"
	req.GPUs = []AllocateGPU{{"v100", 2}, {"p100", 1}, {"k80", 1}}
	req.Jobs = append(req.Jobs, AllocateJob{ID: 7, Model: "ResNet-50 (batch size 16)", Scale: 2, ArrivalS: 3, StepsTotal: 10, StepsLeft: 10, AttainedGPUS: 90})
	req.Jobs[0].PrevType, req.Jobs[1].PrevType, req.Jobs[3].PrevType = "k80", "v100", "v100"
	resp := allocCall(t, s.Handler(), req)

	b, err := os.ReadFile(gavelMulti)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := env.ParseScoredPolicy(b)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := env.GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	st, err := req.state(tab)
	if err != nil {
		t.Fatal(err)
	}
	pol.SetPrevious(map[int]int{0: 2, 1: 0, 7: 0}) // types in request order: v100 0, p100 1, k80 2
	x := make([]float64, len(st.Jobs)*len(st.Types))
	if err := pol.Allocate(st, x); err != nil {
		t.Fatal(err)
	}
	var want []AllocateShare
	for i, j := range st.Jobs {
		for k, name := range st.Types {
			if x[i*len(st.Types)+k] > 0 {
				want = append(want, AllocateShare{j.ID, name, x[i*len(st.Types)+k]})
			}
		}
	}
	if len(want) == 0 || !slices.Equal(resp.Allocation, want) {
		t.Fatalf("API %v, env %v", resp.Allocation, want)
	}
	if sha := fileSHA(t, gavelMulti); resp.SHA256 != sha || resp.Policy != "gavel" {
		t.Fatalf("answer by %s %s, want gavel %s", resp.Policy, resp.SHA256, sha)
	}
	// Built-in policies name no version and ignore prev_type.
	req.Policy = "fifo_perf"
	bi := allocCall(t, s.Handler(), req)
	for i := range req.Jobs {
		req.Jobs[i].PrevType = ""
	}
	if again := allocCall(t, s.Handler(), req); bi.SHA256 != "" || !slices.Equal(bi.Allocation, again.Allocation) {
		t.Fatalf("built-in: sha %q, %v against %v without prev_type", bi.SHA256, bi.Allocation, again.Allocation)
	}
}

// TestAllocLearnedExchange: a policy file with its exchange pass serves
// the exchanged allocation, env.ScoredPolicy's with Exchange, and the
// listing says so. Every pair scores the bias alone, so the greedy pass
// gives the V100 to job 0, the model that gains least from it; the
// exchange hands it to job 1, which gains most.
func TestAllocLearnedExchange(t *testing.T) {
	tab, err := env.GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	v100, err := tab.GPU("v100")
	if err != nil {
		t.Fatal(err)
	}
	k80, err := tab.GPU("k80")
	if err != nil {
		t.Fatal(err)
	}
	models := []string{"ResNet-18 (batch size 16)", "Transformer (batch size 16)", "ResNet-50 (batch size 16)", "LM (batch size 5)", "A3C", "CycleGAN"}
	ratio := func(m string) float64 {
		k := tab.Model(m)
		if k < 0 {
			t.Fatalf("model %q not in the table", m)
		}
		return tab.Throughput(k, v100, 1, false) / tab.Throughput(k, k80, 1, false)
	}
	slices.SortFunc(models, func(a, b string) int { return cmp.Compare(ratio(a), ratio(b)) })
	w := make([]float64, env.NumScoredFeatures)
	w[0] = 1
	path := filepath.Join(t.TempDir(), "exchange.json")
	if err := env.WriteScoredPolicyFile(path, env.ScoredPolicy{Weights: w, Exchange: true}, nil); err != nil {
		t.Fatal(err)
	}
	s := newTestService(t, Config{ReadToken: "r", AdminToken: "a", AllocationPolicies: map[string]string{"x": path}})
	req := AllocateRequest{Policy: "x", TimeS: 100, GPUs: []AllocateGPU{{"v100", 1}, {"k80", 1}},
		Jobs: []AllocateJob{{ID: 0, Model: models[0], Scale: 1, StepsTotal: 100, StepsLeft: 100},
			{ID: 1, Model: models[len(models)-1], Scale: 1, StepsTotal: 100, StepsLeft: 100}}}
	resp := allocCall(t, s.Handler(), req)
	if want := []AllocateShare{{0, "k80", 1}, {1, "v100", 1}}; !slices.Equal(resp.Allocation, want) {
		t.Fatalf("exchange policy allocated %v, want %v (%s x%.2f, %s x%.2f on the V100)", resp.Allocation, want,
			models[0], ratio(models[0]), models[len(models)-1], ratio(models[len(models)-1]))
	}
	if l := s.AllocationPolicies(); len(l.Policies) != 1 || !l.Policies[0].Exchange {
		t.Fatalf("listing %+v, want the exchange policy marked", l)
	}
}

// stickyReq is one ResNet-18 job with a free V100 and a free K80.
func stickyReq(policy, prev string) AllocateRequest {
	return AllocateRequest{Policy: policy, TimeS: 100, GPUs: []AllocateGPU{{"v100", 1}, {"k80", 1}},
		Jobs: []AllocateJob{{ID: 3, Model: "ResNet-18 (batch size 16)", Scale: 1, StepsTotal: 100, StepsLeft: 100, PrevType: prev}}}
}

// TestAllocLearnedPrevType: with a large same_type weight a job that ran
// on the K80 stays there; without history it takes its fastest type, the
// V100. An unknown prev_type is a 400 naming the field.
func TestAllocLearnedPrevType(t *testing.T) {
	path, _ := writePolicy(t, t.TempDir(), "sticky.json", stickyWeights())
	s := newTestService(t, Config{ReadToken: "r", AllocationPolicies: map[string]string{"sticky": path}})
	h := s.Handler()
	if got := allocCall(t, h, stickyReq("sticky", "")).Allocation; !slices.Equal(got, []AllocateShare{{3, "v100", 1}}) {
		t.Fatalf("no history: %v", got)
	}
	if got := allocCall(t, h, stickyReq("sticky", "k80")).Allocation; !slices.Equal(got, []AllocateShare{{3, "k80", 1}}) {
		t.Fatalf("ran on k80: %v", got)
	}
	for _, pol := range []string{"sticky", "fifo_perf"} {
		code, b := call(t, h, "POST", "/v1/allocate", stickyReq(pol, "p100"), "Authorization", "Bearer r")
		if code != http.StatusBadRequest || !strings.Contains(string(b), "jobs[0].prev_type") {
			t.Fatalf("%s: prev_type p100 not in the request: %d %s", pol, code, b)
		}
	}
}

// TestAllocPolicyPutRefusals: every bad version is refused with 4xx and
// the old version keeps serving the exact same answer.
func TestAllocPolicyPutRefusals(t *testing.T) {
	dir := t.TempDir()
	path, sha := writePolicy(t, dir, "sticky.json", stickyWeights())
	s := newTestService(t, Config{ReadToken: "r", AdminToken: "a", AllocationPolicies: map[string]string{"sticky": path}})
	h := s.Handler()
	before := allocCall(t, h, stickyReq("sticky", "k80"))
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	clair, err := os.ReadFile("../docs/policies/gavel-multi-clairvoyant.json")
	if err != nil {
		t.Fatal(err)
	}
	capped, err := os.ReadFile("../docs/policies/gavel-single-tiered-cap4.json")
	if err != nil {
		t.Fatal(err)
	}
	tiered := `{"kind":"tegrl-tiered-packed-allocation","features":["bias","log_attained","log_age","log2_scale","log_spread","served_frac","log_load"],"weights":[0.69,-1,0,0,0,0,0],"log_priority_ratio":1.39}`
	bad := map[string]string{
		"json":        `{"kind":`,
		"nan":         strings.Replace(string(good), "1,", "NaN,", 1),
		"inf":         strings.Replace(string(good), "1,", "1e999,", 1),
		"features":    strings.Replace(string(good), `"same_type"`, `"other"`, 1),
		"kind":        strings.Replace(string(good), env.ScoredPolicyKind, "x", 1),
		"clairvoyant": string(clair),
		"packed":      strings.Replace(string(good), `"weights"`, `"pack": true, "weights"`, 1),
		"tiered nan":  strings.Replace(tiered, "0.69", "NaN", 1),
		"tiered big":  strings.Replace(tiered, "1.39", "11", 1),
		"tiered cap":  string(capped),
		"large":       strings.Repeat(" ", maxAllocPolicyBytes+1),
	}
	for what, body := range bad {
		code, b := call(t, h, "PUT", "/v1/allocation-policies/sticky", body, "Authorization", "Bearer a")
		if want := http.StatusUnprocessableEntity; code != want && (what != "large" || code != http.StatusRequestEntityTooLarge) {
			t.Errorf("%s: %d %s", what, code, b)
		}
		if (what == "clairvoyant" || what == "tiered cap") && !strings.Contains(string(b), `"reason":"clairvoyant"`) {
			t.Errorf("%s: %s", what, b)
		}
		if what == "packed" && !strings.Contains(string(b), "partner it had last round") {
			t.Errorf("%s: %s", what, b)
		}
	}
	for _, name := range []string{"fifo", "Bad", "a.json", strings.Repeat("x", 64)} {
		if code, b := call(t, h, "PUT", "/v1/allocation-policies/"+name, good, "Authorization", "Bearer a"); code != http.StatusBadRequest {
			t.Errorf("name %s: %d %s", name, code, b)
		}
	}
	after := allocCall(t, h, stickyReq("sticky", "k80"))
	if after.SHA256 != sha || !slices.Equal(after.Allocation, before.Allocation) {
		t.Fatalf("after refusals %+v, before %+v", after, before)
	}
	list := s.AllocationPolicies().Policies
	if len(list) != 1 || list[0].SHA256 != sha || list[0].Source != "file:"+path {
		t.Fatalf("list %+v", list)
	}
	// A good version then replaces it and says which one it replaced.
	single, err := os.ReadFile("../docs/policies/gavel-single.json")
	if err != nil {
		t.Fatal(err)
	}
	code, b := call(t, h, "PUT", "/v1/allocation-policies/sticky", single, "Authorization", "Bearer a")
	if p := decodeBody[AllocationPolicy](t, b); code != http.StatusOK || p.Replaced != sha || p.SHA256 != fileSHA(t, "../docs/policies/gavel-single.json") {
		t.Fatalf("good PUT: %d %s", code, b)
	}
}

// TestAllocPolicyPutAuth: PUT needs the admin token; without one
// configured the endpoint is disabled. GET follows GET /v1/policies.
func TestAllocPolicyPutAuth(t *testing.T) {
	path, _ := writePolicy(t, t.TempDir(), "sticky.json", stickyWeights())
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := newTestService(t, Config{ReadToken: "r", WriteToken: "w", AdminToken: "a"})
	h := s.Handler()
	for _, hdr := range [][]string{nil, {"Authorization", "Bearer r"}, {"Authorization", "Bearer w"}, {"Authorization", "Bearer x"}} {
		if code, b := call(t, h, "PUT", "/v1/allocation-policies/sticky", good, hdr...); code != http.StatusUnauthorized {
			t.Errorf("PUT with %v: %d %s", hdr, code, b)
		}
		if code, _ := call(t, h, "GET", "/v1/allocation-policies", nil, hdr...); code != http.StatusUnauthorized {
			t.Errorf("GET with %v: %d", hdr, code)
		}
	}
	code, b := call(t, h, "PUT", "/v1/allocation-policies/sticky", good, "Authorization", "Bearer a")
	if code != http.StatusOK {
		t.Fatalf("admin PUT: %d %s", code, b)
	}
	if p := decodeBody[AllocationPolicy](t, b); p.Name != "sticky" || p.Source != "admin" || p.SHA256 != fileSHA(t, path) || p.Replaced != "" {
		t.Fatalf("PUT answer %+v", p)
	}
	code, b = call(t, h, "GET", "/v1/allocation-policies", nil, "Authorization", "Bearer a")
	if l := decodeBody[AllocationPoliciesResponse](t, b); code != http.StatusOK || len(l.Policies) != 1 || !slices.Equal(l.Policies[0].Features, env.ScoredFeatures) {
		t.Fatalf("GET: %d %s", code, b)
	}
	open := newTestService(t, Config{}).Handler()
	if code, b := call(t, open, "PUT", "/v1/allocation-policies/sticky", good); code != http.StatusForbidden {
		t.Fatalf("no admin token: %d %s", code, b)
	}
	if code, b := call(t, open, "GET", "/v1/allocation-policies", nil); code != http.StatusOK || string(b) != "{\"policies\":[]}\n" {
		t.Fatalf("open GET: %d %q", code, b)
	}
}

// TestAllocPolicyNewRefuses: New names the policy and the file it refuses.
func TestAllocPolicyNewRefuses(t *testing.T) {
	dir := t.TempDir()
	good, _ := writePolicy(t, dir, "good.json", stickyWeights())
	junk := filepath.Join(dir, "junk.json")
	if err := os.WriteFile(junk, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{
		"fifo":        good,
		"Upper":       good,
		"x.json":      good,
		"junk":        junk,
		"missing":     filepath.Join(dir, "missing.json"),
		"clairvoyant": "../docs/policies/gavel-multi-clairvoyant.json",
	} {
		_, err := New(Config{Seed: 1, AllocationPolicies: map[string]string{name: path, "ok": good}})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%s=%s", name, path)) {
			t.Errorf("%s=%s: %v", name, path, err)
		}
	}
	s, err := New(Config{Seed: 1, AllocationPolicies: map[string]string{"multi": gavelMulti, "single": "../docs/policies/gavel-single.json"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.alloc.names(); !slices.Equal(got, []string{"multi", "single"}) {
		t.Fatalf("loaded %v", got)
	}
}

// TestAllocPolicySwapRace: allocations while PUT swaps two versions back
// and forth each get exactly one version's answer, with its SHA-256
// (run with -race).
func TestAllocPolicySwapRace(t *testing.T) {
	dir := t.TempDir()
	pathA, shaA := writePolicy(t, dir, "a.json", stickyWeights())
	wb := stickyWeights()
	wb[5] = -5 // leaves the type it ran on
	pathB, shaB := writePolicy(t, dir, "b.json", wb)
	var bodies [2][]byte
	for i, p := range []string{pathA, pathB} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		bodies[i] = b
	}
	s := newTestService(t, Config{ReadToken: "r", AdminToken: "a", AllocationPolicies: map[string]string{"p": pathA}})
	h := s.Handler()
	req := stickyReq("p", "k80")
	want := map[string][]AllocateShare{shaA: {{3, "k80", 1}}, shaB: {{3, "v100", 1}}}
	stop := make(chan struct{})
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if code, b := call(t, h, "PUT", "/v1/allocation-policies/p", bodies[i%2], "Authorization", "Bearer a"); code != http.StatusOK {
				t.Errorf("PUT: %d %s", code, b)
				return
			}
		}
	}()
	var mu sync.Mutex
	seen := map[string]int{}
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for range 300 {
				code, b := call(t, h, "POST", "/v1/allocate", req, "Authorization", "Bearer r")
				if code != http.StatusOK {
					t.Errorf("allocate: %d %s", code, b)
					return
				}
				resp := decodeBody[AllocateResponse](t, b)
				if w, ok := want[resp.SHA256]; !ok || !slices.Equal(resp.Allocation, w) {
					t.Errorf("answer %+v is neither version's", resp)
					return
				}
				mu.Lock()
				seen[resp.SHA256]++
				mu.Unlock()
			}
		})
	}
	readers.Wait()
	close(stop)
	<-writer
	t.Logf("answers by version: %v", seen)
}

// TestAllocPolicyMetrics: loads and refusals are counted.
func TestAllocPolicyMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	path, _ := writePolicy(t, t.TempDir(), "sticky.json", stickyWeights())
	ap, err := newAllocPolicies(map[string]string{"sticky": path}, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ap.put("sticky", "admin", []byte("{"), nil); err == nil {
		t.Fatal("bad body accepted")
	}
	mf, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range mf {
		for _, m := range f.GetMetric() {
			var k []string
			for _, l := range m.GetLabel() {
				k = append(k, l.GetValue())
			}
			got[strings.Join(k, "/")] = m.GetCounter().GetValue()
		}
	}
	if got["parse/refused/admin"] != 1 || got["/accepted/file"] != 1 {
		t.Fatalf("counters %v", got)
	}
}

// TestAllocPolicyTrust: with a trusted key, a learned allocation policy
// needs its signature: the sidecar PATH.sig at start, the header
// X-Tegrl-Signature on PUT.
func TestAllocPolicyTrust(t *testing.T) {
	key := transport.SigningKeyFromSeed(1)
	pub := key.Public().(ed25519.PublicKey)
	path, _ := writePolicy(t, t.TempDir(), "sticky.json", stickyWeights())
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Seed: 1, TrustKey: pub, AllocationPolicies: map[string]string{"sticky": path}}); err == nil || !strings.Contains(err.Error(), "sticky="+path) {
		t.Fatalf("unsigned file: %v", err)
	}
	sig := transport.SignPolicy(key, body)
	if err := os.WriteFile(path+transport.PolicySigSuffix, sig, 0o644); err != nil {
		t.Fatal(err)
	}
	s := newTestService(t, Config{ReadToken: "r", AdminToken: "a", TrustKey: pub, AllocationPolicies: map[string]string{"sticky": path}})
	h := s.Handler()
	if code, b := call(t, h, "PUT", "/v1/allocation-policies/other", body, "Authorization", "Bearer a"); code != http.StatusUnprocessableEntity || !strings.Contains(string(b), `"reason":"signature"`) {
		t.Fatalf("unsigned PUT: %d %s", code, b)
	}
	if code, b := call(t, h, "PUT", "/v1/allocation-policies/other", body, "Authorization", "Bearer a", "X-Tegrl-Signature", strings.TrimSpace(string(sig))); code != http.StatusOK {
		t.Fatalf("signed PUT: %d %s", code, b)
	}
}

// BenchmarkAllocate answers one allocation request of 400 active gangs of
// 1-8 GPUs on Gavel's 36:36:36 cluster (validation, the round state, the
// policy, the answer) by the learned policy and by fifo_perf.
func BenchmarkAllocate(b *testing.B) {
	tab, err := env.GavelThroughputTable()
	if err != nil {
		b.Fatal(err)
	}
	learned, err := newAllocPolicies(map[string]string{"gavel": gavelMulti}, nil, prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	req := AllocateRequest{TimeS: 1e6, GPUs: []AllocateGPU{{"v100", 36}, {"p100", 36}, {"k80", 36}}}
	types := []string{"", "v100", "p100", "k80"}
	for len(req.Jobs) < 400 {
		m, scale := rng.IntN(len(tab.Models)), 1<<rng.IntN(4)
		if !tab.HasScale(m, scale) {
			continue
		}
		req.Jobs = append(req.Jobs, AllocateJob{ID: len(req.Jobs), Model: tab.Models[m], Scale: scale, ArrivalS: rng.Float64() * 1e6,
			StepsTotal: 1e6, StepsLeft: 5e5, AttainedGPUS: rng.Float64() * 3600, PrevType: types[rng.IntN(4)]})
	}
	for _, pol := range []string{"gavel", "fifo_perf"} {
		b.Run(pol, func(b *testing.B) {
			r := req
			r.Policy = pol
			b.ReportAllocs()
			for b.Loop() {
				if _, err := allocate(tab, &r, learned); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

const tailFile = "../docs/policies/gavel-single-tiered-tail.json"

// envAnswer is pol's answer to req computed by env directly: the round's
// state, the allocation and, for a policy that space-shares GPUs, its
// pairs, listed as the API lists them.
func envAnswer(t *testing.T, req AllocateRequest, pol env.AllocationPolicy) AllocateResponse {
	t.Helper()
	tab, err := allocTable()
	if err != nil {
		t.Fatal(err)
	}
	st, err := req.state(tab)
	if err != nil {
		t.Fatal(err)
	}
	if sp, ok := pol.(env.SeededPolicy); ok {
		sp.Seed(req.Seed)
	}
	x := make([]float64, len(st.Jobs)*len(st.Types))
	if err := pol.Allocate(st, x); err != nil {
		t.Fatal(err)
	}
	var pairs []env.RoundPair
	if pp, ok := pol.(env.PackingPolicy); ok {
		pairs = pp.Pairs(st)
	}
	return *shares(req.Policy, st, x, pairs)
}

// tieredWant is env.TieredPackedPolicy's answer, parsed from the tail
// file, to req.
func tieredWant(t *testing.T, req AllocateRequest) AllocateResponse {
	t.Helper()
	b, err := os.ReadFile(tailFile)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := env.ParseTieredPolicy(b)
	if err != nil {
		t.Fatal(err)
	}
	return envAnswer(t, req, pol)
}

// TestAllocTiered: a tiered policy file serves exactly env's allocation
// and pairs on the same round, names its version, lists as kind tiered
// with its parameters, and keeps nothing from one request to the next:
// answers alone, repeated, and under concurrent requests of other rounds
// are the same.
func TestAllocTiered(t *testing.T) {
	s := newTestService(t, Config{ReadToken: "r", AdminToken: "a", AllocationPolicies: map[string]string{"tail": tailFile}})
	h := s.Handler()
	reqs := []AllocateRequest{packedReq("tail"), packedReq("tail"), packedReq("tail")}
	reqs[1].GPUs = []AllocateGPU{{"v100", 1}, {"k80", 3}}
	reqs[2].TimeS = 2e6 // every job older than the age guard
	for i := range reqs[2].Jobs {
		reqs[2].Jobs[i].Scale = 1 + i%2
		reqs[2].Jobs[i].Model = "ResNet-18 (batch size 16)"
	}
	wants := make([]AllocateResponse, len(reqs))
	for i, req := range reqs {
		wants[i] = tieredWant(t, req)
		wants[i].SHA256 = fileSHA(t, tailFile)
		if got := allocCall(t, h, req); !reflect.DeepEqual(got, wants[i]) {
			t.Fatalf("round %d: API %+v, env %+v", i, got, wants[i])
		}
		if err := responseCheck(&reqs[i], &wants[i]); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
	if len(wants[0].Pairs) == 0 {
		t.Fatalf("no pairs in %+v", wants[0])
	}
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for k := range 20 {
				i := (g + k) % len(reqs)
				code, b := call(t, h, "POST", "/v1/allocate", reqs[i], "Authorization", "Bearer r")
				if got := decodeBody[AllocateResponse](t, b); code != http.StatusOK || !reflect.DeepEqual(got, wants[i]) {
					t.Errorf("concurrent round %d: %d %+v", i, code, got)
					return
				}
			}
		})
	}
	wg.Wait()
	// The distilled student (the same tiers over a column support) serves
	// env's answer too, and so does it priced (its bands price columns
	// in).
	serves := func(name, path string, pol env.AllocationPolicy) {
		t.Helper()
		if code, b := call(t, h, "PUT", "/v1/allocation-policies/"+name, mustRead(t, path), "Authorization", "Bearer a"); code != http.StatusOK {
			t.Fatalf("%s PUT: %d %s", name, code, b)
		}
		for i, req := range reqs {
			req.Policy = name
			want := envAnswer(t, req, pol)
			want.SHA256 = fileSHA(t, path)
			if got := allocCall(t, h, req); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s round %d: API %+v, env %+v", name, i, got, want)
			}
		}
	}
	student := "../docs/policies/gavel-single-tiered-student.json"
	spol, err := env.ParseTieredPolicy(mustRead(t, student))
	if err != nil || spol.Support == nil {
		t.Fatalf("student: %v", err)
	}
	serves("student", student, spol)
	for b := spol.Support; b != nil; b = b.Above {
		b.Price = true
	}
	priced := filepath.Join(t.TempDir(), "priced.json")
	if err := env.WriteTieredPolicy(priced, spol, nil); err != nil {
		t.Fatal(err)
	}
	serves("priced", priced, spol)
	list := s.AllocationPolicies().Policies // priced, student, tail
	want := TieredParams{LogPriorityRatio: 1.024529424974006, GangGuardHours: 100, AgeGuardHours: 300, TieDeficit: 5}
	if len(list) != 3 || list[2].Kind != "tiered" || list[2].Tiered == nil || *list[2].Tiered != want || list[2].Features[len(list[2].Features)-1] != "log_load" {
		t.Fatalf("list %+v", list)
	}
	want.SupportColumns = 145
	if *list[1].Tiered != want {
		t.Fatalf("student listed as %+v, want %+v", *list[1].Tiered, want)
	}
	want.SupportPriced = true
	if *list[0].Tiered != want {
		t.Fatalf("priced student listed as %+v, want %+v", *list[0].Tiered, want)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
