package serve

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// interleaving drives one service with concurrent random requests: full
// state updates that grow and shrink the cluster (across the 256 machines
// where learned policies switch to sparse observations), machines down
// and up, jobs started and stopped, decisions, outcomes, filter and
// prioritize calls and policy hot-loads. Every cluster generation names
// its machines "gG-mNNNNNN", so a decision can be checked against the
// cluster it was made on.
type interleaving struct {
	t        *testing.T
	s        *Service
	h        http.Handler
	sizes    []int // machines of each generation
	policies [][]byte
	bound    time.Duration

	mu      sync.Mutex
	gen     int // newest generation posted
	byGen   map[int]int
	ids     []string
	jobs    []string
	answers atomic.Int64
	placed  atomic.Int64 // decisions that named a machine
	loaded  atomic.Int64 // hot-loads accepted
	rebuilt atomic.Int64 // full state updates applied
	slowest atomic.Int64 // ns
}

// genCluster is generation g's cluster of n machines.
func (iv *interleaving) genCluster(g, n int) []MachineJSON {
	ms := machinesJSON(testCluster(iv.t, n))
	for i := range ms {
		ms[i].Name = fmt.Sprintf("g%d-%s", g, ms[i].Name)
	}
	return ms
}

// names returns up to k machine names of the newest generation, a few of
// them past its end (unknown to the model).
func (iv *interleaving) names(rng *rand.Rand, k int) []string {
	iv.mu.Lock()
	g, n := iv.gen, iv.byGen[iv.gen]
	iv.mu.Unlock()
	out := make([]string, k)
	for j := range out {
		out[j] = fmt.Sprintf("g%d-m%06d", g, rng.IntN(n+n/8+1))
	}
	return out
}

// checkMachine checks that a decision's machine exists in its generation
// and that its index is the machine's.
func (iv *interleaving) checkMachine(name string, idx int) {
	gs, rest, ok := strings.Cut(strings.TrimPrefix(name, "g"), "-m")
	g, err1 := strconv.Atoi(gs)
	i, err2 := strconv.Atoi(rest)
	iv.mu.Lock()
	n, known := iv.byGen[g]
	iv.mu.Unlock()
	if !ok || err1 != nil || err2 != nil || !known || i >= n || i != idx {
		iv.t.Errorf("decision names machine %q (index %d), not a machine of its cluster", name, idx)
	}
}

// do sends one request and checks the bound and the status.
func (iv *interleaving) do(method, path string, body any, hdr ...string) (int, []byte) {
	start := time.Now()
	code, b := call(iv.t, iv.h, method, path, body, hdr...)
	took := time.Since(start)
	if took > iv.bound {
		iv.t.Errorf("%s %s answered after %v (bound %v)", method, path, took, iv.bound)
	}
	for {
		old := iv.slowest.Load()
		if int64(took) <= old || iv.slowest.CompareAndSwap(old, int64(took)) {
			break
		}
	}
	iv.answers.Add(1)
	if code >= 500 && code != http.StatusServiceUnavailable {
		iv.t.Errorf("%s %s: %d %s", method, path, code, b)
	}
	return code, b
}

func (iv *interleaving) step(rng *rand.Rand) {
	switch op := rng.IntN(100); {
	case op < 6: // a new cluster: grow or shrink
		n := iv.sizes[rng.IntN(len(iv.sizes))]
		iv.mu.Lock()
		iv.gen++
		g := iv.gen
		iv.byGen[g] = n
		iv.mu.Unlock()
		if code, _ := iv.do("POST", "/v1/state", StateRequest{Machines: iv.genCluster(g, n)}, bearer("w")...); code == http.StatusOK {
			iv.rebuilt.Add(1)
		}
	case op < 14: // machines down and up
		var st []MachineStatusJSON
		for _, n := range iv.names(rng, 1+rng.IntN(4)) {
			st = append(st, MachineStatusJSON{Name: n, Up: rng.IntN(2) == 0})
		}
		iv.do("POST", "/v1/state", StateRequest{MachineStatus: st}, bearer("w")...)
	case op < 24: // a job starts, another stops
		key := fmt.Sprintf("ns/run-%d", rng.Uint32())
		req := StateRequest{Started: []StartedJSON{{Key: key, Machine: iv.names(rng, 1)[0], Job: JobJSON{CPUMilli: 500 + rng.Int64N(4000), MemMiB: 512 + rng.Int64N(8192)}}}}
		iv.mu.Lock()
		if len(iv.jobs) > 0 && rng.IntN(2) == 0 {
			k := rng.IntN(len(iv.jobs))
			req.Stopped = []string{iv.jobs[k]}
			iv.jobs = append(iv.jobs[:k], iv.jobs[k+1:]...)
		}
		iv.mu.Unlock()
		if code, _ := iv.do("POST", "/v1/state", req, bearer("w")...); code == http.StatusOK {
			iv.mu.Lock()
			iv.jobs = append(iv.jobs, key)
			iv.mu.Unlock()
		}
	case op < 60: // a decision
		js := JobJSON{CPUMilli: 250 + rng.Int64N(8000), MemMiB: 256 + rng.Int64N(16384), GPUs: rng.IntN(3), WaitS: float64(rng.IntN(100))}
		if js.GPUs == 1 && rng.IntN(2) == 0 {
			js.GPUMilli = 100 * (1 + rng.IntN(9))
		}
		code, b := iv.do("POST", "/v1/decide", DecideRequest{Key: fmt.Sprintf("ns/pod-%d", rng.IntN(500)), Job: js}, bearer("r")...)
		if code == http.StatusOK {
			d := decodeBody[DecideResponse](iv.t, b)
			if d.Action.Machine != nil {
				iv.placed.Add(1)
				iv.checkMachine(*d.Action.Machine, d.Action.MachineIndex)
			} else if d.Action.MachineIndex != -1 {
				iv.t.Errorf("wait with machine index %d", d.Action.MachineIndex)
			}
			iv.mu.Lock()
			iv.ids = append(iv.ids, d.DecisionID)
			iv.mu.Unlock()
		}
	case op < 66: // an outcome
		iv.mu.Lock()
		var id string
		if len(iv.ids) > 0 {
			k := rng.IntN(len(iv.ids))
			id = iv.ids[k]
			iv.ids = append(iv.ids[:k], iv.ids[k+1:]...)
		}
		iv.mu.Unlock()
		if id != "" {
			if code, b := iv.do("POST", "/v1/outcome", OutcomeRequest{DecisionID: id, Reward: f64(rng.NormFloat64())}, bearer("w")...); code != http.StatusOK {
				iv.t.Errorf("outcome of decision %s: %d %s", id, code, b)
			}
		}
	case op < 78: // filter
		names := iv.names(rng, 1+rng.IntN(12))
		code, b := iv.do("POST", "/filter", extenderv1.ExtenderArgs{Pod: testPod(fmt.Sprint("f", rng.IntN(50)), "1", "2Gi", int64(rng.IntN(2)), nil), NodeNames: &names}, bearer("r")...)
		if code == http.StatusOK {
			fr := decodeBody[extenderv1.ExtenderFilterResult](iv.t, b)
			if fr.Error == "" && !partition(names, fr) {
				iv.t.Errorf("filter of %v: %s", names, b)
			}
		}
	case op < 90: // prioritize
		names := iv.names(rng, 1+rng.IntN(12))
		code, b := iv.do("POST", "/prioritize", extenderv1.ExtenderArgs{Pod: testPod(fmt.Sprint("p", rng.IntN(50)), "2", "1Gi", 0, nil), NodeNames: &names}, bearer("r")...)
		if code == http.StatusOK {
			hp := decodeBody[extenderv1.HostPriorityList](iv.t, b)
			if len(hp) != len(names) {
				iv.t.Errorf("prioritize of %d nodes: %s", len(names), b)
			}
			for _, p := range hp {
				if p.Score < extenderv1.MinExtenderPriority || p.Score > extenderv1.MaxExtenderPriority {
					iv.t.Errorf("score %+v", p)
				}
			}
		}
	case op < 96: // a hot-load into either arm
		arm := []string{"a", "b"}[rng.IntN(2)]
		code, b := iv.do("POST", "/v1/policies?arm="+arm+"&name=hot", iv.policies[rng.IntN(len(iv.policies))], bearer("adm")...)
		if code != http.StatusOK && code != http.StatusServiceUnavailable {
			iv.t.Errorf("hot-load of a committed policy: %d %s", code, b)
		}
		if code == http.StatusOK {
			iv.loaded.Add(1)
		}
	default: // the clock
		iv.do("POST", "/v1/state", StateRequest{TimeS: f64(float64(rng.IntN(100000)))}, bearer("w")...)
	}
}

// partition reports whether a filter result puts every node asked about
// in exactly one of passed, failed and unresolvable, and nothing else.
func partition(names []string, fr extenderv1.ExtenderFilterResult) bool {
	if fr.NodeNames == nil {
		return false
	}
	passed := map[string]bool{}
	for _, n := range *fr.NodeNames {
		passed[n] = true
	}
	asked := map[string]bool{}
	for _, n := range names {
		asked[n] = true
		_, f := fr.FailedNodes[n]
		_, u := fr.FailedAndUnresolvableNodes[n]
		if b2i(passed[n])+b2i(f)+b2i(u) != 1 {
			return false
		}
	}
	return len(passed)+len(fr.FailedNodes)+len(fr.FailedAndUnresolvableNodes) == len(asked)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestInterleaving is the property test of the service under concurrent
// random traffic (see interleaving), for built-in schedulers and the
// committed learned policies (MLP, GNN, distilled student) on arm a, with
// hot-loads of the learned policies into both arms: no panic escapes
// (no 500, nothing counted in tegrl_serve_panics_total), every request
// is answered within the bound, decisions name machines of the cluster
// they were made on, and afterwards the model's bookkeeping agrees with
// its simulation. Short: a few hundred requests per scheduler on clusters
// of 40 to 300 machines; without -short, thousands on up to 2,000.
func TestInterleaving(t *testing.T) {
	scheds := []string{"langevin", "fgd", committedPolicies[0], committedPolicies[1], committedPolicies[2]}
	sizes, steps, workers := []int{40, 270, 300}, 40, 4
	if !testing.Short() {
		sizes, steps = []int{40, 257, 300, 600, 1000, 2000}, 500
	}
	var policies [][]byte
	for _, p := range committedPolicies {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		policies = append(policies, b)
	}
	for si, sched := range scheds {
		name := sched[strings.LastIndex(sched, "/")+1:]
		t.Run(name, func(t *testing.T) {
			iv := &interleaving{t: t, sizes: sizes, policies: policies, bound: 20 * time.Second, byGen: map[int]int{1: 300}, gen: 1}
			s, err := New(Config{Seed: uint64(si + 1), ReadToken: "r", WriteToken: "w", AdminToken: "adm", RequestTimeout: 15 * time.Second,
				Arms: []ArmConfig{{Name: "a", Spec: sched, Weight: 3}, {Name: "b", Spec: "langevin", Weight: 1}}})
			if err != nil {
				t.Fatal(err)
			}
			iv.s, iv.h = s, s.Handler()
			if code, b := iv.do("POST", "/v1/state", StateRequest{Machines: iv.genCluster(1, 300)}, bearer("w")...); code != http.StatusOK {
				t.Fatalf("first state: %d %s", code, b)
			}
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(si), uint64(w)))
					for range steps {
						iv.step(rng)
					}
				})
			}
			wg.Wait()
			checkBookkeeping(t, s)
			if n := testutilPanics(s); n != 0 {
				t.Errorf("%v panics counted", n)
			}
			if iv.placed.Load() == 0 || iv.loaded.Load() == 0 || iv.rebuilt.Load() == 0 {
				t.Errorf("a vacuous run: %d placements, %d hot-loads, %d clusters", iv.placed.Load(), iv.loaded.Load(), iv.rebuilt.Load())
			}
			t.Logf("%s: %d requests (%d placements, %d hot-loads, %d clusters), slowest %v", name, iv.answers.Load(),
				iv.placed.Load(), iv.loaded.Load(), iv.rebuilt.Load(), time.Duration(iv.slowest.Load()))
		})
	}
}

// checkBookkeeping checks the model's bookkeeping against its simulation:
// running jobs, their keys, machines up.
func checkBookkeeping(t *testing.T, s *Service) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.model
	l := m.live
	if l.Running() != len(m.jobs) || len(m.jobs) != len(m.keys) {
		t.Errorf("%d running jobs, %d keys, %d slots", l.Running(), len(m.jobs), len(m.keys))
	}
	up := 0
	for i := range l.Cluster().Machines {
		if l.State().M[i].Up {
			up++
		}
	}
	if up != m.up {
		t.Errorf("%d machines up, the model counts %d", up, m.up)
	}
	for key, id := range m.jobs {
		if m.keys[id] != key {
			t.Errorf("job %s in slot %d, whose key is %s", key, id, m.keys[id])
		}
	}
}

func testutilPanics(s *Service) float64 {
	total := 0.0
	for _, h := range []string{"decide", "prioritize", "state", "outcome", "filter", "policy_load"} {
		total += testutil.ToFloat64(s.met.panics.WithLabelValues(h))
	}
	return total
}
