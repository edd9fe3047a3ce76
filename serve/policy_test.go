package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	dto "github.com/prometheus/client_model/go"

	"github.com/tegrl/tegrl/rl"
	"github.com/tegrl/tegrl/rl/transport"
)

const adminToken = "s3cret"

func bearer(tok string) []string { return []string{"Authorization", "Bearer " + tok} }

// servedVersion is the policy version a decision for key gets.
func servedVersion(t *testing.T, h http.Handler, key string) string {
	t.Helper()
	code, b := call(t, h, "POST", "/v1/decide", DecideRequest{Key: key, Job: JobJSON{CPUMilli: 1000, MemMiB: 2048}})
	if code != http.StatusOK {
		t.Fatalf("decide: %d %s", code, b)
	}
	return decodeBody[DecideResponse](t, b).PolicyVersion
}

func refusedCount(s *Service, source, reason string) float64 {
	var m dto.Metric
	if err := s.met.refused.WithLabelValues("a", source, reason).Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// TestHotLoadAdmin: an arm without a policy is not ready; the admin
// endpoint needs the token; a good policy serves; corrupt, mismatched and
// NaN candidates are refused with their reason, counted, and the old
// policy keeps serving.
func TestHotLoadAdmin(t *testing.T) {
	s := newTestService(t, Config{Arms: []ArmConfig{{Name: "a", Spec: "hot", Weight: 1}}, AdminToken: adminToken})
	h := s.Handler()
	if code, b := call(t, h, "GET", "/readyz", nil); code != http.StatusServiceUnavailable || !strings.Contains(string(b), "arm a has no policy") {
		t.Errorf("readyz before a policy: %d %s", code, b)
	}
	if code, b := call(t, h, "POST", "/v1/decide", DecideRequest{Key: "k", Job: JobJSON{CPUMilli: 1, MemMiB: 1}}); code != http.StatusServiceUnavailable {
		t.Errorf("decide before a policy: %d %s", code, b)
	}
	good := policyPayload(t, 1, nil)
	if code, _ := call(t, h, "POST", "/v1/policies", good); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	if code, _ := call(t, h, "POST", "/v1/policies", good, bearer("wrong")...); code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", code)
	}
	code, b := call(t, h, "POST", "/v1/policies?name=v1.safetensors", good, bearer(adminToken)...)
	if code != http.StatusOK {
		t.Fatalf("load: %d %s", code, b)
	}
	sum := sha256.Sum256(good)
	v1 := "v1@" + hex.EncodeToString(sum[:])[:12]
	if ap := decodeBody[ArmPolicy](t, b); ap.Version != v1 || ap.Source != "admin" || ap.Arm != "a" {
		t.Errorf("load response %s", b)
	}
	if code, _ := call(t, h, "GET", "/readyz", nil); code != http.StatusOK {
		t.Errorf("readyz after a policy: %d", code)
	}
	if v := servedVersion(t, h, "k"); v != v1 {
		t.Fatalf("serving %q, want %q", v, v1)
	}

	flipped := append([]byte{}, good...)
	flipped[len(flipped)/2] ^= 0xff
	schema := policyPayload(t, 2, map[string]string{metaSchema: "0000"})
	// Metadata that claims a width the weights cannot hold: refused before
	// the O(hidden³) initialisation of such a network.
	wide := policyPayload(t, 2, map[string]string{"tegrl.policy_config": `{"candidates":16,"hidden":4096,"damping_min":0,"damping_max":2,"replica_zero_bias":4}`})
	for _, tc := range []struct {
		name, query string
		payload     []byte
		reason      string
	}{
		{"truncated", "", good[:len(good)/3], reasonDecode},
		{"checksum", "&sha256=" + strings.Repeat("ab", 32), policyPayload(t, 3, nil), reasonChecksum},
		{"bitflip", "&sha256=" + hex.EncodeToString(sum[:]), flipped, reasonChecksum},
		{"schema", "", schema, reasonSchema},
		{"nan", "", nanPolicyPayload(t), reasonNaN},
		{"wide", "", wide, reasonPolicy},
		{"not-a-policy", "", []byte(`{}`), reasonDecode},
	} {
		code, b := call(t, h, "POST", "/v1/policies?name="+tc.name+tc.query, tc.payload, bearer(adminToken)...)
		e := decodeBody[apiError](t, b)
		if code != http.StatusUnprocessableEntity || e.Reason != tc.reason {
			t.Errorf("%s: %d %s, want 422 reason %s", tc.name, code, b, tc.reason)
		}
		if got := refusedCount(s, "admin", tc.reason); got < 1 {
			t.Errorf("%s: refusal not counted", tc.name)
		}
		if v := servedVersion(t, h, "k"); v != v1 {
			t.Errorf("%s: serving %q after a refused candidate, want %q", tc.name, v, v1)
		}
	}
	if code, b := call(t, h, "POST", "/v1/policies?arm=z", good, bearer(adminToken)...); code != http.StatusBadRequest {
		t.Errorf("unknown arm: %d %s", code, b)
	}
	pr := s.Policies()
	if len(pr.Events) != 8 || !pr.Events[0].Accepted || pr.Events[1].Accepted || pr.Arms[0].Version != v1 {
		t.Errorf("policies: %+v", pr)
	}
	off := newTestService(t, Config{})
	if code, _ := call(t, off.Handler(), "POST", "/v1/policies", good, bearer("")...); code != http.StatusForbidden {
		t.Errorf("admin endpoint without a token configured: %d, want 403", code)
	}
}

// serveBackground runs s.Serve on a loopback port until the test ends.
func serveBackground(t *testing.T, s *Service) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func armVersion(s *Service) string {
	if p := s.router.arms[0].cur.Load(); p != nil {
		return p.Version
	}
	return ""
}

// TestHotLoadDir: policy files written to the watched directory load in
// order; a corrupt one and one whose sidecar checksum differs are refused
// and the previous version keeps serving.
func TestHotLoadDir(t *testing.T) {
	dir := t.TempDir()
	s := newTestService(t, Config{Arms: []ArmConfig{{Name: "a", Spec: "langevin", Weight: 1}}, PolicyDir: dir, WatchInterval: 10 * time.Millisecond})
	serveBackground(t, s)
	good := policyPayload(t, 1, nil)
	if err := os.WriteFile(filepath.Join(dir, "v1.safetensors"), good, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(good)
	v1 := "v1@" + hex.EncodeToString(sum[:])[:12]
	waitFor(t, "v1 to load", 5*time.Second, func() bool { return armVersion(s) == v1 })
	if err := os.WriteFile(filepath.Join(dir, "v2.safetensors"), good[:100], 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "v2 to be refused", 5*time.Second, func() bool { return refusedCount(s, "dir", reasonDecode) == 1 })
	v3 := policyPayload(t, 3, nil)
	os.WriteFile(filepath.Join(dir, "v3.safetensors.sha256"), []byte(strings.Repeat("0", 64)+"  v3.safetensors\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "v3.safetensors"), v3, 0o644)
	waitFor(t, "v3 to be refused", 5*time.Second, func() bool { return refusedCount(s, "dir", reasonChecksum) == 1 })
	if v := armVersion(s); v != v1 {
		t.Errorf("serving %q after refusals, want %q", v, v1)
	}
}

// TestHotLoadNATS: a policy put into the JetStream object store bucket
// loads; one put later replaces it; a NaN one is refused.
func TestHotLoadNATS(t *testing.T) {
	srv, err := transport.StartServer(transport.ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := transport.Dial(ctx, transport.DialConfig{URL: srv.ClientURL(), RunID: "trainer"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	obs, err := conn.JetStream().CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "policies"})
	if err != nil {
		t.Fatal(err)
	}
	p1 := policyPayload(t, 1, nil)
	if _, err := obs.PutBytes(ctx, "run7-v1", p1); err != nil {
		t.Fatal(err)
	}
	s := newTestService(t, Config{Arms: []ArmConfig{{Name: "a", Spec: "hot", Weight: 1}}, NATS: NATSConfig{URL: srv.ClientURL(), Bucket: "policies"}})
	serveBackground(t, s)
	sum := sha256.Sum256(p1)
	waitFor(t, "the bucket's policy to load", 10*time.Second, func() bool { return armVersion(s) == "run7-v1@"+hex.EncodeToString(sum[:])[:12] })
	if _, err := obs.PutBytes(ctx, "run7-v2", nanPolicyPayload(t)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the NaN policy to be refused", 10*time.Second, func() bool { return refusedCount(s, "nats", reasonNaN) == 1 })
	p3 := policyPayload(t, 3, nil)
	if _, err := obs.PutBytes(ctx, "run7-v3", p3); err != nil {
		t.Fatal(err)
	}
	sum = sha256.Sum256(p3)
	waitFor(t, "v3 to load", 10*time.Second, func() bool { return armVersion(s) == "run7-v3@"+hex.EncodeToString(sum[:])[:12] })
}

// TestArmFromFile: an arm configured with a policy file serves it; a file
// that fails validation fails New.
func TestArmFromFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.safetensors")
	os.WriteFile(path, policyPayload(t, 1, nil), 0o644)
	s := newTestService(t, Config{Arms: []ArmConfig{{Name: "a", Spec: dir, Weight: 1}}})
	if v := servedVersion(t, s.Handler(), "k"); !strings.HasPrefix(v, "policy@") {
		t.Errorf("serving %q", v)
	}
	os.WriteFile(path, nanPolicyPayload(t), 0o644)
	if _, err := New(Config{Cluster: testCluster(t, 16), Arms: []ArmConfig{{Name: "a", Spec: path, Weight: 1}}}); err == nil || !strings.Contains(err.Error(), "nan") {
		t.Errorf("NaN policy file: %v", err)
	}
	if _, err := New(Config{Arms: []ArmConfig{{Name: "a", Spec: "no-such-scheduler", Weight: 1}}}); err == nil || !strings.Contains(err.Error(), "not built in") {
		t.Errorf("unknown scheduler: %v", err)
	}
}

// TestArmGNNPolicy: a policy with the GNN encoder serves like any other
// (its decisions featurise the candidates' histories and topology).
func TestArmGNNPolicy(t *testing.T) {
	p, err := rl.NewPolicy(rl.PolicyConfig{Candidates: 16, Hidden: 8, DampingMax: 2, ReplicaZeroBias: 4, Encoder: rl.EncoderGNN}, 2)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.EncodeParams(nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "policy.safetensors")
	os.WriteFile(path, b, 0o644)
	s := newTestService(t, Config{Arms: []ArmConfig{{Name: "a", Spec: path, Weight: 1}}})
	for k := 0; k < 5; k++ {
		if v := servedVersion(t, s.Handler(), fmt.Sprintf("k%d", k)); !strings.HasPrefix(v, "policy@") {
			t.Fatalf("serving %q", v)
		}
	}
}

// TestArmCommittedPolicies: the committed GNN teacher and its ReLU student
// (docs/policies) pass validation and place jobs.
func TestArmCommittedPolicies(t *testing.T) {
	for _, name := range []string{"small-gnn", "student-gnn"} {
		path := "../docs/policies/" + name + ".safetensors"
		s := newTestService(t, Config{Arms: []ArmConfig{{Name: "a", Spec: path, Weight: 1}}})
		h := s.Handler()
		for k := 0; k < 5; k++ {
			code, b := call(t, h, "POST", "/v1/decide", DecideRequest{Key: fmt.Sprintf("k%d", k), Job: JobJSON{CPUMilli: 1000 * int64(k+1), MemMiB: 2048}})
			if code != http.StatusOK {
				t.Fatalf("%s: decide: %d %s", name, code, b)
			}
			r := decodeBody[DecideResponse](t, b)
			if r.Action.Machine == nil || r.Verdict != "placed" || !strings.HasPrefix(r.PolicyVersion, name+"@") {
				t.Fatalf("%s: decision %+v", name, r)
			}
		}
	}
}
