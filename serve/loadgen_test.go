package serve

import (
	"context"
	"testing"
	"time"
)

// TestRunLoad: a short load run on loopback sends decisions at the rate
// asked for, all answered 200, while policies hot-load; a preloaded
// cluster has about the share of its CPU requested that was asked for.
func TestRunLoad(t *testing.T) {
	c := testCluster(t, 64)
	s := newTestService(t, Config{Cluster: c, ReadToken: "r", AdminToken: "a"})
	pre, err := PreloadState(c, 0.5, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.State(pre); err != nil {
		t.Fatal(err)
	}
	st := s.model.live.State()
	if share := float64(st.UsedCPU) / float64(st.CapCPU); share < 0.4 || share > 0.55 {
		t.Errorf("preloaded CPU share %.2f, want about 0.5", share)
	}
	url := serveBackground(t, s)
	rep, err := RunLoad(context.Background(), LoadConfig{URL: url, ReadToken: "r", AdminToken: "a", Rate: 200, Duration: 500 * time.Millisecond,
		Clients: 2, HotLoadEvery: 100 * time.Millisecond, Policies: [][]byte{policyPayload(t, 1, nil), policyPayload(t, 2, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed != 0 || rep.Decisions < 50 || rep.Decisions > 101 || rep.HotLoads < 2 || rep.HotLoadsFailed != 0 {
		t.Errorf("load report %s (first failure %q)", rep, rep.FirstFailure)
	}
	if _, err := RunLoad(context.Background(), LoadConfig{URL: url, Rate: 10, Duration: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	rep, _ = RunLoad(context.Background(), LoadConfig{URL: url, Rate: 20, Duration: 200 * time.Millisecond})
	if rep.Failed != rep.Decisions || rep.FirstFailure == "" {
		t.Errorf("decisions without the read token: %s", rep)
	}
}
