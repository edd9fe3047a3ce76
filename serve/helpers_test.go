package serve

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/rl"
)

// testCluster is a synthetic cluster of n machines.
func testCluster(t testing.TB, n int) *env.Cluster {
	t.Helper()
	c, err := env.NewSyntheticCluster(n, 1)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newTestService builds a service on a 64-machine synthetic cluster unless
// cfg names another (or none, with a nil Cluster and noCluster).
func newTestService(t testing.TB, cfg Config) *Service {
	t.Helper()
	if cfg.Cluster == nil {
		cfg.Cluster = testCluster(t, 64)
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// policyPayload is a small untrained policy file.
func policyPayload(t testing.TB, seed uint64, extra map[string]string) []byte {
	t.Helper()
	p, err := rl.NewPolicy(rl.PolicyConfig{Candidates: 16, Hidden: 8, DampingMax: 2, ReplicaZeroBias: 4}, seed)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.EncodeParams(extra)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// defaultPolicyPayload is an untrained policy file of the default size
// (rl.DefaultPolicyConfig: 16 candidates, width 32), for benchmarks.
func defaultPolicyPayload(t testing.TB, seed uint64) []byte {
	t.Helper()
	p, err := rl.NewPolicy(rl.DefaultPolicyConfig(), seed)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.EncodeParams(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// nanPolicyPayload is a policy file whose first weight is NaN.
func nanPolicyPayload(t testing.TB) []byte {
	t.Helper()
	p, err := rl.NewPolicy(rl.PolicyConfig{Candidates: 16, Hidden: 8, DampingMax: 2, ReplicaZeroBias: 4}, 3)
	if err != nil {
		t.Fatal(err)
	}
	p.Params().At(0).Data[0] = float32(math.NaN())
	b, err := p.EncodeParams(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// call sends one request to h and returns the status and body.
func call(t testing.TB, h http.Handler, method, path string, body any, hdr ...string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(js)
	}
	req := httptest.NewRequest(method, path, rd)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// decodeBody unmarshals a response body.
func decodeBody[T any](t testing.TB, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("response %s: %v", b, err)
	}
	return v
}

// machinesJSON lists a cluster's machines as a full state update does.
func machinesJSON(c *env.Cluster) []MachineJSON {
	out := make([]MachineJSON, len(c.Machines))
	for i := range c.Machines {
		m := &c.Machines[i]
		out[i] = MachineJSON{Name: m.Name, CPUMilli: m.CPU, MemMiB: m.Mem, GPUs: m.GPUs, GPUModel: m.GPUModel, Rack: c.Racks[m.Rack].Name}
	}
	return out
}

func f64(x float64) *float64 { return &x }
