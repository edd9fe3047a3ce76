package serve

import (
	"encoding/json"
	"net/http"
	"path/filepath"
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

// FuzzAllocate: every request is refused or answered with a valid
// allocation, by the built-in policies and by a loaded learned policy
// ("gavel", with prev_type).
func FuzzAllocate(f *testing.F) {
	b, _ := json.Marshal(allocReq())
	f.Add(b)
	lr := allocReq()
	lr.Policy, lr.Jobs[0].PrevType, lr.Jobs[2].PrevType = "gavel", "k80", "v100"
	b, _ = json.Marshal(lr)
	f.Add(b)
	f.Add([]byte(`{"policy":"gavel","time_s":9,"gpus":[{"type":"p100","count":2}],"jobs":[{"id":4,"model":"ResNet-18 (batch size 16)","scale":2,"steps_total":1,"steps_left":1,"prev_type":"v100"}]}`))
	f.Add([]byte(`{"policy":"tiresias","gpus":[{"type":"k80","count":4}],"jobs":[{"id":1,"model":"ResNet-18 (batch size 16)","scale":4,"steps_total":1,"steps_left":1}]}`))
	f.Add([]byte(`{"policy":"max_min_fairness_perf","time_s":5,"gpus":[{"type":"v100","count":2},{"type":"k80","count":0}],"jobs":[]}`))
	tab, err := env.GavelThroughputTable()
	if err != nil {
		f.Fatal(err)
	}
	learned, err := newAllocPolicies(map[string]string{"gavel": "../docs/policies/gavel-multi.json"}, nil, prometheus.NewRegistry())
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
		if (resp.SHA256 != "") != (req.Policy == "gavel") {
			t.Fatalf("policy %s answered with version %q", req.Policy, resp.SHA256)
		}
		// Every answer is a valid allocation: shares in (0, 1], rows at
		// most 1, whole gangs within each type's capacity.
		row := map[int]float64{}
		use := map[string]float64{}
		scale := map[int]int{}
		for _, j := range req.Jobs {
			scale[j.ID] = j.Scale
		}
		for _, a := range resp.Allocation {
			if !(a.Fraction > 0 && a.Fraction <= 1+1e-9) {
				t.Fatalf("share %v", a)
			}
			row[a.Job] += a.Fraction
			use[a.Type] += a.Fraction * float64(scale[a.Job])
		}
		for j, v := range row {
			if v > 1+1e-6 {
				t.Fatalf("job %d gets %v of the time", j, v)
			}
		}
		for _, g := range req.GPUs {
			if use[g.Type] > float64(g.Count)+1e-6 {
				t.Fatalf("type %s: %v GPUs used of %d", g.Type, use[g.Type], g.Count)
			}
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
