package serve

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tegrl/tegrl/env"
)

func allocReq() AllocateRequest {
	return AllocateRequest{Policy: "fifo_perf", TimeS: 100,
		GPUs: []AllocateGPU{{"v100", 1}, {"p100", 1}, {"k80", 1}},
		Jobs: []AllocateJob{
			{ID: 0, Model: "ResNet-18 (batch size 16)", Scale: 1, ArrivalS: 0, StepsTotal: 1000, StepsLeft: 1000},
			{ID: 1, Model: "Transformer (batch size 16)", Scale: 1, ArrivalS: 1, StepsTotal: 1000, StepsLeft: 500, AttainedGPUS: 40},
			{ID: 2, Model: "Transformer (batch size 16)", Scale: 1, ArrivalS: 2, StepsTotal: 1000, StepsLeft: 1000},
		}}
}

// TestAllocate: FIFO-perf in arrival order gives each job the free type
// where the table says it runs fastest: ResNet-18 the P100 (35.9 steps/s
// against 32.4 on the V100), the first Transformer the V100 (11.1 against
// 9.5), the second what is left.
func TestAllocate(t *testing.T) {
	tab, err := env.GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	req := allocReq()
	resp, err := Allocate(tab, &req)
	if err != nil {
		t.Fatal(err)
	}
	want := []AllocateShare{{0, "p100", 1}, {1, "v100", 1}, {2, "k80", 1}}
	if !slices.Equal(resp.Allocation, want) {
		t.Fatalf("allocation %v, want %v", resp.Allocation, want)
	}
	again, _ := Allocate(tab, &req)
	if !slices.Equal(again.Allocation, resp.Allocation) {
		t.Fatal("same request, other answer")
	}
	bad := map[string]func(r *AllocateRequest){
		"policy":             func(r *AllocateRequest) { r.Policy = "nope" },
		"gpus":               func(r *AllocateRequest) { r.GPUs = nil },
		"gpus[0].type":       func(r *AllocateRequest) { r.GPUs[0].Type = "h100" },
		"gpus[1].type":       func(r *AllocateRequest) { r.GPUs[1].Type = "v100" },
		"gpus[2].count":      func(r *AllocateRequest) { r.GPUs[2].Count = -1 },
		"time_s":             func(r *AllocateRequest) { r.TimeS = -1 },
		"jobs[1].id":         func(r *AllocateRequest) { r.Jobs[1].ID = 0 },
		"jobs[0].model":      func(r *AllocateRequest) { r.Jobs[0].Model = "GPT-9" },
		"jobs[0].scale":      func(r *AllocateRequest) { r.Jobs[0].Scale = 3 },
		"jobs[2].arrival_s":  func(r *AllocateRequest) { r.Jobs[2].ArrivalS = 101 },
		"jobs[0].steps_left": func(r *AllocateRequest) { r.Jobs[0].StepsLeft = 2000 },
		"jobs[1].priority":   func(r *AllocateRequest) { r.Jobs[1].Priority = -1 },
	}
	for field, mut := range bad {
		r := allocReq()
		mut(&r)
		if _, err := Allocate(tab, &r); err == nil || !strings.HasPrefix(err.Error(), field+":") {
			t.Errorf("%s: error %v", field, err)
		}
	}
}

// TestAllocateHTTP: the endpoint needs the read role and answers bad
// bodies with 400.
func TestAllocateHTTP(t *testing.T) {
	s := newTestService(t, Config{ReadToken: "r", WriteToken: "w", AdminToken: "a"})
	h := s.Handler()
	if code, _ := call(t, h, "POST", "/v1/allocate", allocReq()); code != http.StatusUnauthorized {
		t.Fatalf("anonymous: %d", code)
	}
	code, b := call(t, h, "POST", "/v1/allocate", allocReq(), "Authorization", "Bearer r")
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, b)
	}
	var resp AllocateResponse
	if err := json.Unmarshal(b, &resp); err != nil || len(resp.Allocation) != 3 {
		t.Fatalf("%s %v", b, err)
	}
	if code, b := call(t, h, "POST", "/v1/allocate", `{"policy":"fifo","gpus":[{"type":"v100","count":1}],"extra":1}`, "Authorization", "Bearer r"); code != http.StatusBadRequest {
		t.Fatalf("unknown field: %d %s", code, b)
	}
}

// packedReq: eight single-GPU jobs of four models on two V100s, a P100
// and a K80, arrived over two hours: more jobs than GPUs, so the packed
// policies pair some of them.
func packedReq(policy string) AllocateRequest {
	req := AllocateRequest{Policy: policy, Seed: 3, TimeS: 7200, GPUs: []AllocateGPU{{"v100", 2}, {"p100", 1}, {"k80", 1}}}
	models := []string{"ResNet-18 (batch size 16)", "Transformer (batch size 16)", "ResNet-50 (batch size 16)", "LM (batch size 5)"}
	for i := range 8 {
		req.Jobs = append(req.Jobs, AllocateJob{ID: 10 + i, Model: models[i%4], Scale: 1, ArrivalS: float64(900 * i),
			StepsTotal: 5000, StepsLeft: 5000 - float64(500*(8-i)), AttainedGPUS: float64(300 * (8 - i))})
	}
	return req
}

// responseCheck tells whether resp is a valid answer to req: shares and
// pairs as checkAllocation requires.
func responseCheck(req *AllocateRequest, resp *AllocateResponse) error {
	nt := len(req.GPUs)
	st := &env.RoundState{}
	x := make([]float64, len(req.Jobs)*nt)
	index := map[int]int{}
	typ := map[string]int{}
	for t, g := range req.GPUs {
		st.Types, st.Capacity, typ[g.Type] = append(st.Types, g.Type), append(st.Capacity, g.Count), t
	}
	for i, j := range req.Jobs {
		st.Jobs, index[j.ID] = append(st.Jobs, env.RoundJob{ID: j.ID, Scale: j.Scale}), i
	}
	for _, a := range resp.Allocation {
		if !(a.Fraction > 0) {
			return fmt.Errorf("share %v", a)
		}
		x[index[a.Job]*nt+typ[a.Type]] += a.Fraction
	}
	var pairs []env.RoundPair
	for _, p := range resp.Pairs {
		if !(p.Fraction > 0) || p.Jobs[0] >= p.Jobs[1] {
			return fmt.Errorf("pair %v", p)
		}
		row := make([]float64, nt)
		row[typ[p.Type]] = p.Fraction
		pairs = append(pairs, env.RoundPair{A: p.Jobs[0], B: p.Jobs[1], X: row})
	}
	return checkAllocation(st, x, pairs)
}

// TestAllocatePairs: the policies that space-share GPUs answer their
// pairs: Gandiva runs every job in a pair, max_min_fairness_packed pairs
// some; each answer is a valid allocation, and the pairs are the
// policy's own.
func TestAllocatePairs(t *testing.T) {
	tab, err := env.GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gandiva", "max_min_fairness_packed"} {
		req := packedReq(name)
		resp, err := Allocate(tab, &req)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Pairs) == 0 {
			t.Fatalf("%s: no pairs: %+v", name, resp)
		}
		if err := responseCheck(&req, resp); err != nil {
			t.Fatalf("%s: %v: %+v", name, err, resp)
		}
		pol, err := env.AllocationPolicyByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if want := envAnswer(t, req, pol); !reflect.DeepEqual(*resp, want) {
			t.Fatalf("%s: API %+v, env %+v", name, *resp, want)
		}
	}
	// A policy that does not pack answers no pairs (and no "pairs" key).
	req := packedReq("max_min_fairness_perf")
	resp, err := Allocate(tab, &req)
	if err != nil || resp.Pairs != nil {
		t.Fatalf("%+v %v", resp, err)
	}
	if b, _ := json.Marshal(resp); strings.Contains(string(b), "pairs") {
		t.Fatalf("%s", b)
	}
}

// FuzzAllocate: every request is refused or answered with a valid
// allocation, by the built-in policies and by loaded learned policies
// ("gavel", a scored policy with prev_type; "tail", a tiered one).
func FuzzAllocate(f *testing.F) {
	b, _ := json.Marshal(allocReq())
	f.Add(b)
	lr := allocReq()
	lr.Policy, lr.Jobs[0].PrevType, lr.Jobs[2].PrevType = "gavel", "k80", "v100"
	b, _ = json.Marshal(lr)
	f.Add(b)
	f.Add([]byte(`{"policy":"gavel","time_s":9,"gpus":[{"type":"p100","count":2}],"jobs":[{"id":4,"model":"ResNet-18 (batch size 16)","scale":2,"steps_total":1,"steps_left":1,"prev_type":"v100"}]}`))
	f.Add([]byte(`{"policy":"priced","time_s":9,"gpus":[{"type":"h800","count":2},{"type":"a100-sxm4-80gb","count":2}],"jobs":[{"id":4,"model":"ResNet-18 (batch size 16)","scale":1,"steps_total":9,"steps_left":5},{"id":5,"model":"ResNet-18 (batch size 16)","scale":1,"steps_total":9,"steps_left":9}]}`))
	f.Add([]byte(`{"policy":"tiresias","gpus":[{"type":"k80","count":4}],"jobs":[{"id":1,"model":"ResNet-18 (batch size 16)","scale":4,"steps_total":1,"steps_left":1}]}`))
	f.Add([]byte(`{"policy":"max_min_fairness_perf","time_s":5,"gpus":[{"type":"v100","count":2},{"type":"k80","count":0}],"jobs":[]}`))
	for _, pol := range []string{"tail", "priced", "gandiva", "max_min_fairness_packed"} {
		b, _ = json.Marshal(packedReq(pol))
		f.Add(b)
	}
	tab, err := allocTable()
	if err != nil {
		f.Fatal(err)
	}
	// The distilled student, priced: its column generation on any round.
	sb, err := os.ReadFile("../docs/policies/gavel-single-tiered-student.json")
	if err != nil {
		f.Fatal(err)
	}
	student, err := env.ParseTieredPolicy(sb)
	if err != nil {
		f.Fatal(err)
	}
	for b := student.Support; b != nil; b = b.Above {
		b.Price = true
	}
	priced := filepath.Join(f.TempDir(), "priced.json")
	if err := env.WriteTieredPolicy(priced, student, nil); err != nil {
		f.Fatal(err)
	}
	learned, err := newAllocPolicies(map[string]string{"gavel": "../docs/policies/gavel-multi.json",
		"tail": "../docs/policies/gavel-single-tiered-tail.json", "priced": priced}, nil, prometheus.NewRegistry())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var req AllocateRequest
		if decodeStrict(strings.NewReader(string(in)), &req) != nil {
			return
		}
		if len(req.Jobs) > 50 || req.Policy == "lookahead" {
			return // keep the LP policies' runs short
		}
		resp, err := allocate(tab, &req, learned)
		if err != nil {
			return
		}
		if (resp.SHA256 != "") != (req.Policy == "gavel" || req.Policy == "tail" || req.Policy == "priced") {
			t.Fatalf("policy %s answered with version %q", req.Policy, resp.SHA256)
		}
		// Every answer is a valid allocation: shares in (0, 1], each
		// job's shares and pairs at most 1, pairs of one gang size, whole
		// gangs within each type's capacity.
		if err := responseCheck(&req, resp); err != nil {
			t.Fatalf("%v: %+v", err, resp)
		}
	})
}

// TestAllocateRefusesPolicyFiles checks that a client cannot make the
// service read a file: a valid scored policy file's path is refused.
func TestAllocateRefusesPolicyFiles(t *testing.T) {
	tab, err := env.GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "p.json")
	if err := env.WriteScoredPolicy(path, env.DefaultScoredWeights(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := env.AllocationPolicyByName(path); err != nil {
		t.Fatalf("the file itself is valid: %v", err)
	}
	r := allocReq()
	r.Policy = path
	if _, err := Allocate(tab, &r); err == nil || !strings.Contains(err.Error(), "not a file") {
		t.Fatalf("policy file accepted over the API: %v", err)
	}
}

// TestAllocateLPSize: a round whose packed LP would be too large
// (120 priorities make 120 classes, under the simulator's own bound) is
// a 400 on jobs for the packed LP policies, before any LP is built (the
// limit is env.MaxMinFairnessPacked.MaxPairColumns); every job type and gang
// size of the table in both tiers is well within the bound, and other
// policies take the large round.
func TestAllocateLPSize(t *testing.T) {
	tab, err := env.GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	learned, err := newAllocPolicies(map[string]string{"tail": "../docs/policies/gavel-single-tiered-tail.json"}, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	wide := AllocateRequest{TimeS: 1e5, GPUs: []AllocateGPU{{"v100", 36}, {"p100", 36}, {"k80", 36}}}
	for i := range 120 {
		wide.Jobs = append(wide.Jobs, AllocateJob{ID: i, Model: "ResNet-18 (batch size 16)", Scale: 1, StepsTotal: 1000, StepsLeft: 1000, Priority: 1 + float64(i)/1000})
	}
	every := AllocateRequest{TimeS: 1e5, GPUs: wide.GPUs}
	for _, m := range tab.Models {
		for _, sc := range []int{1, 2, 4, 8} {
			if tab.HasScale(tab.Model(m), sc) {
				for k := range 2 { // one in each tier
					every.Jobs = append(every.Jobs, AllocateJob{ID: len(every.Jobs), Model: m, Scale: sc, ArrivalS: float64(k) * 5e4,
						StepsTotal: 1000, StepsLeft: 1000, AttainedGPUS: float64(k) * 1e6})
				}
			}
		}
	}
	for _, pol := range []string{"max_min_fairness_packed", "tail"} {
		wide.Policy, every.Policy = pol, pol
		if _, err := allocate(tab, &wide, learned); err == nil || !strings.HasPrefix(err.Error(), "jobs: the packed LP would have more than") {
			t.Errorf("%s, 120 classes: %v", pol, err)
		}
		resp, err := allocate(tab, &every, learned)
		if err != nil {
			t.Fatalf("%s, every job type: %v", pol, err)
		}
		if err := responseCheck(&every, resp); err != nil {
			t.Fatal(err)
		}
	}
	// The other LP policies: at most 300 classes; a class of
	// max_min_fairness_perf is a job type, gang size and priority, of
	// finish-time fairness a job.
	for _, pol := range []string{"max_min_fairness_perf", "finish_time_fairness", "min_total_duration_perf"} {
		wide.Policy = pol
		for _, n := range []int{300, 301} {
			r := wide
			r.Jobs = nil
			for i := range n {
				r.Jobs = append(r.Jobs, AllocateJob{ID: i, Model: "ResNet-18 (batch size 16)", Scale: 1, StepsTotal: 1000, StepsLeft: 1000, Priority: 1 + float64(i)/1000})
			}
			if _, err := allocate(tab, &r, learned); (err != nil) != (n > 300) || err != nil && !strings.HasPrefix(err.Error(), "jobs: policy "+pol) {
				t.Errorf("%s, %d classes: %v", pol, n, err)
			}
		}
	}
	// 1,000 jobs of one class are one class for max_min_fairness_perf,
	// 1,000 for finish-time fairness.
	for _, pol := range []string{"max_min_fairness_perf", "finish_time_fairness"} {
		r := AllocateRequest{Policy: pol, TimeS: 1e5, GPUs: wide.GPUs}
		for i := range 1000 {
			r.Jobs = append(r.Jobs, AllocateJob{ID: i, Model: "ResNet-18 (batch size 16)", Scale: 1, ArrivalS: float64(i), StepsTotal: 1000, StepsLeft: 1000})
		}
		if _, err := allocate(tab, &r, learned); (err != nil) != (pol == "finish_time_fairness") {
			t.Errorf("%s, 1,000 jobs of one type: %v", pol, err)
		}
	}
}

// TestAllocateGPUModels: /v1/allocate takes the bundled GPU model
// mapping's types beside Gavel's (h800: the v100's throughputs times
// 3.72), answers with them, and names the types it has for one it lacks.
func TestAllocateGPUModels(t *testing.T) {
	tab, err := allocTable()
	if err != nil {
		t.Fatal(err)
	}
	gavel, err := env.GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	req := packedReq("max_min_fairness_packed")
	req.GPUs = []AllocateGPU{{"h800", 1}, {"k80", 3}}
	st, err := req.state(tab)
	if err != nil {
		t.Fatal(err)
	}
	v100, _ := gavel.GPU("v100")
	for i, j := range st.Jobs {
		if want := 3.72 * gavel.Throughput(j.Type, v100, j.Scale, false); math.Abs(st.Throughput[i*2]-want) > 1e-9*want {
			t.Fatalf("job %d on the h800: %v steps/s, want %v", j.ID, st.Throughput[i*2], want)
		}
	}
	srv := newTestService(t, Config{ReadToken: "r"}).Handler()
	got := allocCall(t, srv, req)
	if len(got.Allocation)+len(got.Pairs) == 0 {
		t.Fatalf("no allocation: %+v", got)
	}
	pol, err := env.AllocationPolicyByName("max_min_fairness_packed")
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float64, len(st.Jobs)*len(st.Types))
	if err := pol.Allocate(st, x); err != nil {
		t.Fatal(err)
	}
	want := shares(req.Policy, st, x, pol.(env.PackingPolicy).Pairs(st))
	if !reflect.DeepEqual(got, *want) {
		t.Fatalf("API %+v, env %+v", got, *want)
	}
	// A student whose support names the h800 serves env's answer.
	tail, err := env.ParseTieredPolicy(mustRead(t, "../docs/policies/gavel-single-tiered-tail.json"))
	if err != nil {
		t.Fatal(err)
	}
	if tail.Support, err = env.NewColumnSupport(gavel, []env.SupportColumn{{A: "ResNet-18 (batch size 16)", GPU: "k80"},
		{A: "ResNet-18 (batch size 16)", B: "Transformer (batch size 16)", GPU: "h800"}}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "spot-student.json")
	if err := env.WriteTieredPolicy(path, tail, nil); err != nil {
		t.Fatal(err)
	}
	srv = newTestService(t, Config{ReadToken: "r", AllocationPolicies: map[string]string{"spot": path}}).Handler()
	req.Policy = "spot"
	got = allocCall(t, srv, req)
	want = &AllocateResponse{}
	*want = envAnswer(t, req, tail)
	want.SHA256 = fileSHA(t, path)
	if !reflect.DeepEqual(got, *want) || len(got.Pairs) == 0 {
		t.Fatalf("spot student: API %+v, env %+v", got, *want)
	}
	// The LP's round-off (a share of 5e-17 of the T4 to the LM job) is
	// not listed.
	lp := AllocateRequest{Policy: "max_min_fairness_packed", TimeS: 10, GPUs: []AllocateGPU{{"h800", 1}, {"t4", 1}}, Jobs: []AllocateJob{
		{ID: 1, Model: "ResNet-18 (batch size 16)", Scale: 1, StepsTotal: 9, StepsLeft: 5}, {ID: 2, Model: "LM (batch size 5)", Scale: 1, StepsTotal: 9, StepsLeft: 9}}}
	small := allocCall(t, srv, lp)
	if len(small.Allocation) != 2 || len(small.Pairs) != 1 {
		t.Fatalf("round-off listed: %+v", small)
	}
	for _, a := range small.Allocation {
		if a.Fraction < 0.2 {
			t.Fatalf("round-off listed: %+v", small)
		}
	}
	req.GPUs[0].Type = "h900"
	if code, b := call(t, srv, "POST", "/v1/allocate", req, "Authorization", "Bearer r"); code != http.StatusBadRequest || !strings.Contains(string(b), "gpus[0].type") {
		t.Fatalf("h900: %d %s", code, b)
	}
}
