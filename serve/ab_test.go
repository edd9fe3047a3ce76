package serve

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tegrl/tegrl/env"
)

// TestABRouting: keys split by the weights, each key sticks to its arm,
// outcomes feed the arm's statistics.
func TestABRouting(t *testing.T) {
	s := newTestService(t, Config{Arms: []ArmConfig{{Name: "a", Spec: "langevin", Weight: 0.9}, {Name: "b", Spec: "bestfit", Weight: 0.1}}})
	h := s.Handler()
	count := map[string]int{}
	var ids []string
	arms := map[string]string{}
	for k := 0; k < 1000; k++ {
		key := fmt.Sprintf("ns/job-%d", k)
		code, b := call(t, h, "POST", "/v1/decide", DecideRequest{Key: key, Job: JobJSON{CPUMilli: 100, MemMiB: 128}})
		if code != http.StatusOK {
			t.Fatalf("decide: %d %s", code, b)
		}
		d := decodeBody[DecideResponse](t, b)
		count[d.Arm]++
		arms[key] = d.Arm
		ids = append(ids, d.DecisionID)
		if want := map[string]string{"a": "langevin", "b": "bestfit"}[d.Arm]; d.PolicyVersion != want {
			t.Errorf("arm %s served %s", d.Arm, d.PolicyVersion)
		}
	}
	if count["b"] < 70 || count["b"] > 130 || count["a"]+count["b"] != 1000 {
		t.Errorf("split %v, want about 900/100", count)
	}
	for k := 0; k < 50; k++ {
		key := fmt.Sprintf("ns/job-%d", k)
		_, b := call(t, h, "POST", "/v1/decide", DecideRequest{Key: key, Job: JobJSON{CPUMilli: 100, MemMiB: 128}})
		if d := decodeBody[DecideResponse](t, b); d.Arm != arms[key] {
			t.Errorf("key %s moved from arm %s to %s", key, arms[key], d.Arm)
		}
	}
	// Outcomes: reward 1 for arm a, 0 and 2 alternating for arm b.
	var sumA, sumB float64
	var nA, nB int
	for k, id := range ids[:200] {
		arm := arms[fmt.Sprintf("ns/job-%d", k)]
		r := 1.0
		if arm == "b" {
			r = float64(2 * (nB % 2))
			sumB += r
			nB++
		} else {
			sumA += r
			nA++
		}
		ok := k%2 == 0
		if code, b := call(t, h, "POST", "/v1/outcome", OutcomeRequest{DecisionID: id, Reward: &r, Success: &ok, JCTS: f64(100)}); code != http.StatusOK {
			t.Fatalf("outcome: %d %s", code, b)
		}
	}
	if code, _ := call(t, h, "POST", "/v1/outcome", OutcomeRequest{DecisionID: ids[0], Reward: f64(1)}); code != http.StatusBadRequest {
		t.Errorf("second outcome for one decision: %d, want 400", code)
	}
	code, b := call(t, h, "GET", "/v1/ab", nil)
	if code != http.StatusOK {
		t.Fatalf("ab: %d", code)
	}
	sum := decodeBody[ABSummary](t, b)
	a, bb := sum.Arms[0], sum.Arms[1]
	if a.Arm != "a" || a.Decisions != int64(count["a"])+int64(50-countB(arms, 50)) || a.Outcomes != int64(nA) || *a.RewardMean != sumA/float64(nA) || *a.MeanJCTS != 100 {
		t.Errorf("arm a summary %+v", a)
	}
	if bb.Outcomes != int64(nB) || math.Abs(*bb.RewardMean-sumB/float64(nB)) > 1e-12 || bb.Share != 0.1 && math.Abs(bb.Share-0.1) > 1e-12 {
		t.Errorf("arm b summary %+v", bb)
	}
	if nB > 1 && sum.RewardWelchT == nil {
		t.Error("no Welch t with rewards on both arms")
	}
}

func countB(arms map[string]string, n int) int {
	c := 0
	for k := 0; k < n; k++ {
		if arms[fmt.Sprintf("ns/job-%d", k)] == "b" {
			c++
		}
	}
	return c
}

// TestConcurrentRequests: decisions, state updates, outcomes, summaries
// and policy swaps at once (run with -race); no request fails and every
// decision is served by some valid version.
func TestConcurrentRequests(t *testing.T) {
	s := newTestService(t, Config{Arms: []ArmConfig{{Name: "a", Spec: "hot", Weight: 1}, {Name: "b", Spec: "langevin", Weight: 1}}, AdminToken: adminToken})
	h := s.Handler()
	p1, p2 := policyPayload(t, 1, nil), policyPayload(t, 2, nil)
	if code, b := call(t, h, "POST", "/v1/policies?arm=a", p1, bearer(adminToken)...); code != http.StatusOK {
		t.Fatalf("load: %d %s", code, b)
	}
	n := 60
	if testing.Short() {
		n = 25
	}
	var wg sync.WaitGroup
	errs := make(chan string, 1000)
	for g := 0; g < 4; g++ {
		wg.Go(func() {
			for k := 0; k < n; k++ {
				key := fmt.Sprintf("g%d/k%d", g, k)
				code, b := call(t, h, "POST", "/v1/decide", DecideRequest{Key: key, Job: JobJSON{CPUMilli: 500, MemMiB: 1024}})
				if code != http.StatusOK {
					errs <- fmt.Sprintf("decide: %d %s", code, b)
					continue
				}
				d := decodeBody[DecideResponse](t, b)
				if d.Action.Machine != nil {
					code, b = call(t, h, "POST", "/v1/state", StateRequest{Started: []StartedJSON{{Key: key, Machine: *d.Action.Machine, Job: JobJSON{CPUMilli: 500, MemMiB: 1024}}}})
					if code != http.StatusOK {
						errs <- fmt.Sprintf("state: %d %s", code, b)
					}
				}
				if code, b := call(t, h, "POST", "/v1/outcome", OutcomeRequest{DecisionID: d.DecisionID, Reward: f64(0.5)}); code != http.StatusOK {
					errs <- fmt.Sprintf("outcome: %d %s", code, b)
				}
			}
		})
	}
	wg.Go(func() {
		for k := 0; k < 6; k++ {
			p := [][]byte{p1, p2}[k%2]
			if code, b := call(t, h, "POST", "/v1/policies?arm=a", p, bearer(adminToken)...); code != http.StatusOK {
				errs <- fmt.Sprintf("swap: %d %s", code, b)
			}
			call(t, h, "GET", "/v1/ab", nil)
			call(t, h, "GET", "/metrics", nil)
			call(t, h, "GET", "/v1/policies", nil)
		}
	})
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if s.model.live.Running() == 0 {
		t.Error("no job placed")
	}
}

// TestGracefulShutdown: a request in flight when the shutdown begins
// completes; new connections are refused after it; Serve returns nil.
func TestGracefulShutdown(t *testing.T) {
	s := newTestService(t, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	waitFor(t, "the server", 5*time.Second, func() bool {
		r, err := http.Get(url + "/healthz")
		if err == nil {
			r.Body.Close()
		}
		return err == nil
	})
	// Hold the model so that the next decision waits inside its handler.
	s.mu.Lock()
	res := make(chan int, 1)
	go func() {
		r, err := http.Post(url+"/v1/decide", "application/json", strings.NewReader(`{"key":"k","job":{"cpu_milli":1,"mem_mib":1}}`))
		if err != nil {
			res <- -1
			return
		}
		r.Body.Close()
		res <- r.StatusCode
	}()
	time.Sleep(100 * time.Millisecond) // the request reaches the handler and waits for the model
	cancel()
	time.Sleep(50 * time.Millisecond)
	s.mu.Unlock()
	if code := <-res; code != http.StatusOK {
		t.Errorf("in-flight request: %d, want 200", code)
	}
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Error("the server still accepts connections after shutdown")
	}
}

// TestWallClock: on the wall clock the model's time advances by itself,
// and state updates may not carry time_s.
func TestWallClock(t *testing.T) {
	s := newTestService(t, Config{Clock: ClockWall, Sim: env.SimConfig{Tick: 0.01}}) // 10 ms ticks
	serveBackground(t, s)
	waitFor(t, "the model's clock to move", 5*time.Second, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.model.live.Ticks() > 0
	})
	if code, b := call(t, s.Handler(), "POST", "/v1/state", StateRequest{TimeS: f64(5)}); code != http.StatusBadRequest || !strings.Contains(string(b), "wall clock") {
		t.Errorf("time_s on the wall clock: %d %s", code, b)
	}
}
