package env

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTieredPackedPolicyTwoJobs: two 1-GPU jobs of different types on one
// GPU, no space sharing. Max-min fairness with priorities p0 and p1 gives
// job i the share that makes x_i / p_i equal, all of the GPU in use:
// x = (p0, p1) / (p0 + p1). With the default weights job 0 (no service)
// is in the upper tier at ratio 4 and job 1 (2 GPU-hours) is not: 0.8 and
// 0.2. With the ratio at 0 (factor 1) they share equally.
func TestTieredPackedPolicyTwoJobs(t *testing.T) {
	s := &RoundState{Time: 7200, Types: []string{"v100"}, Capacity: []int{1},
		Jobs:       []RoundJob{{ID: 0, Type: 0, Scale: 1, Priority: 1}, {ID: 1, Type: 1, Scale: 1, Attained: 7200, Priority: 1}},
		Throughput: []float64{1, 1}}
	w, r := DefaultTieredParams(false)
	p := &TieredPackedPolicy{Weights: w, LogRatio: r}
	if !p.Tier(s, 0) || p.Tier(s, 1) {
		t.Fatalf("tiers %v %v, want upper, lower", p.Tier(s, 0), p.Tier(s, 1))
	}
	x := make([]float64, 2)
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	if math.Abs(x[0]-0.8) > 1e-9 || math.Abs(x[1]-0.2) > 1e-9 {
		t.Fatalf("x = %v, want [0.8 0.2]", x)
	}
	if s.Jobs[0].Priority != 1 || s.Jobs[1].Priority != 1 {
		t.Fatalf("the caller's jobs changed: %+v", s.Jobs)
	}
	// Two 1-GPU jobs on one GPU: log_load is ln 2, so slope -1 takes the
	// factor from 4 to 2: shares 2/3 and 1/3.
	sloped := &TieredPackedPolicy{Weights: w, LogRatio: r, LoadSlope: -1}
	if err := sloped.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	if math.Abs(x[0]-2.0/3) > 1e-9 || math.Abs(x[1]-1.0/3) > 1e-9 {
		t.Fatalf("slope -1: x = %v, want [2/3 1/3]", x)
	}
	even := &TieredPackedPolicy{Weights: w}
	if err := even.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	if math.Abs(x[0]-0.5) > 1e-9 || math.Abs(x[1]-0.5) > 1e-9 {
		t.Fatalf("ratio 1: x = %v, want [0.5 0.5]", x)
	}
}

// TestTieredDefaultThreshold: the default upper tier is exactly the jobs
// with under one GPU-hour of service.
func TestTieredDefaultThreshold(t *testing.T) {
	w, r := DefaultTieredParams(false)
	p := &TieredPackedPolicy{Weights: w, LogRatio: r}
	for _, c := range []struct {
		attained float64
		upper    bool
	}{{0, true}, {3599, true}, {3601, false}, {36000, false}} {
		s := &RoundState{Time: 1e5, Types: []string{"v100"}, Capacity: []int{4},
			Jobs: []RoundJob{{ID: 0, Scale: 2, Attained: c.attained, Priority: 1}}, Throughput: []float64{1}}
		if got := p.Tier(s, 0); got != c.upper {
			t.Errorf("attained %v GPU-s: upper %v, want %v", c.attained, got, c.upper)
		}
	}
}

// TestTieredMatchesPrioritisedLP: on a packed round the tiered policy's
// allocation and pairs are exactly max_min_fairness_packed's with the
// upper tier's priorities multiplied by the ratio.
func TestTieredMatchesPrioritisedLP(t *testing.T) {
	s := &RoundState{Time: 20 * 3600, Types: []string{"v100", "p100", "k80"}, Capacity: []int{2, 2, 2},
		Pair: func(i, k, j int) (float64, float64, bool) { return 0.7, 0.6, true }}
	for i := range 9 {
		s.Jobs = append(s.Jobs, RoundJob{ID: i, Type: i % 3, Scale: 1, Arrival: float64(i) * 3600, Attained: float64(i%4) * 3000, Priority: 1})
		s.Throughput = append(s.Throughput, 3+float64(i%3), 2, 1)
	}
	w := []float64{1, -2, 0.3, 0, 0.5, -0.4, 0.2}
	p := &TieredPackedPolicy{Weights: w, LogRatio: 1.5}
	x := make([]float64, 27)
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	ref := *s
	ref.Jobs = slices.Clone(s.Jobs)
	upper := 0
	for i := range ref.Jobs {
		if p.Tier(s, i) {
			ref.Jobs[i].Priority = math.Exp(1.5)
			upper++
		}
	}
	if upper == 0 || upper == len(s.Jobs) {
		t.Fatalf("%d of %d jobs in the upper tier: the case tests nothing", upper, len(s.Jobs))
	}
	var lp MaxMinFairnessPacked
	y := make([]float64, 27)
	if err := lp.Allocate(&ref, y); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(x, y) {
		t.Fatalf("tiered %v\nLP with priorities %v", x, y)
	}
	a, b := p.Pairs(s), lp.Pairs(&ref)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("pairs %d and %d", len(a), len(b))
	}
	for i := range a {
		if a[i].A != b[i].A || a[i].B != b[i].B || !slices.Equal(a[i].X, b[i].X) {
			t.Fatalf("pair %d: %+v against %+v", i, a[i], b[i])
		}
	}
}

// TestTieredLoad: log_load is log(GPUs demanded / GPUs), the same for
// every job; with bias 0.5 and weight -1 on it a job is upper while the
// active jobs demand the cluster's GPUs (0.5 > 0) and lower at twice that
// (0.5 - ln 2 < 0).
func TestTieredLoad(t *testing.T) {
	w := make([]float64, len(TieredFeatures))
	w[0], w[slices.Index(TieredFeatures, "log_load")] = 0.5, -1
	p := &TieredPackedPolicy{Weights: w}
	s := &RoundState{Types: []string{"v100", "k80"}, Capacity: []int{2, 2},
		Jobs: []RoundJob{{ID: 0, Scale: 2, Priority: 1}, {ID: 1, Scale: 2, Priority: 1}}, Throughput: []float64{2, 1, 2, 1}}
	if got := LogLoad(s); got != 0 {
		t.Fatalf("log_load at demand = GPUs: %v", got)
	}
	if !p.Tier(s, 0) || !p.Tier(s, 1) {
		t.Fatal("demand = GPUs: want both upper")
	}
	s.Jobs[0].Scale, s.Jobs[1].Scale = 4, 4
	if got := LogLoad(s); math.Abs(got-math.Ln2) > 1e-15 {
		t.Fatalf("log_load at twice the GPUs: %v, want ln 2", got)
	}
	if p.Tier(s, 0) || p.Tier(s, 1) {
		t.Fatal("demand = 2 x GPUs: want both lower")
	}
	if got := LogLoad(&RoundState{Capacity: []int{4}}); got != 0 {
		t.Fatalf("log_load with no job: %v", got)
	}
}

// TestTieredClairvoyant: the clairvoyant feature is log(1 + hours left on
// the fastest type); with bias 1 and weight -1 on it a job needing 0.5 h
// is upper (1 - ln 1.5 > 0) and one needing 2 h is not (1 - ln 3 < 0).
func TestTieredClairvoyant(t *testing.T) {
	w := make([]float64, len(TieredFeatures)+1)
	w[0], w[len(TieredFeatures)] = 1, -1
	p := &TieredPackedPolicy{Weights: w, Clairvoyant: true}
	s := &RoundState{Types: []string{"v100", "k80"}, Capacity: []int{1, 1},
		Jobs:       []RoundJob{{ID: 0, Scale: 1, StepsLeft: 7200 * 2, Priority: 1}, {ID: 1, Scale: 1, StepsLeft: 1800 * 2, Priority: 1}},
		Throughput: []float64{2, 1, 2, 1}}
	if p.Tier(s, 0) || !p.Tier(s, 1) {
		t.Fatalf("tiers %v %v, want lower, upper", p.Tier(s, 0), p.Tier(s, 1))
	}
	if !IsClairvoyant(p) || IsClairvoyant(&TieredPackedPolicy{}) || p.Name() != "tiered_packed_clairvoyant" {
		t.Fatal("clairvoyance misreported")
	}
	if err := p.Allocate(s, make([]float64, 4)); err != nil {
		t.Fatal(err)
	}
	if err := (&TieredPackedPolicy{Weights: w[:3]}).Allocate(s, make([]float64, 4)); err == nil || !strings.Contains(err.Error(), "3 weights") {
		t.Fatalf("3 weights: %v", err)
	}
	if err := (&TieredPackedPolicy{Weights: w, Clairvoyant: true, LogRatio: math.NaN()}).Allocate(s, make([]float64, 4)); err == nil {
		t.Fatal("NaN ratio accepted")
	}
}

// TestTieredMaxUpperHours: both jobs score into the upper tier (no
// service yet); job 0 has 4 hours left on its fastest type (2 steps/s on
// the v100), job 1 half an hour. A cap of 2 hours keeps job 0 in the lower
// tier, one of 4 hours or more (or none) keeps both in the upper tier; a
// cap makes the policy clairvoyant and survives the file; a negative, NaN
// or infinite cap is refused.
func TestTieredMaxUpperHours(t *testing.T) {
	w, r := DefaultTieredParams(false)
	s := &RoundState{Types: []string{"v100", "k80"}, Capacity: []int{1, 1},
		Jobs:       []RoundJob{{ID: 0, Scale: 1, StepsLeft: 4 * 3600 * 2, Priority: 1}, {ID: 1, Scale: 1, StepsLeft: 1800 * 2, Priority: 1}},
		Throughput: []float64{2, 1, 2, 1}}
	for _, c := range []struct {
		cap    float64
		upper0 bool
	}{{0, true}, {2, false}, {3.99, false}, {4, true}, {100, true}} {
		p := &TieredPackedPolicy{Weights: w, LogRatio: r, MaxUpperHours: c.cap}
		if p.Tier(s, 0) != c.upper0 || !p.Tier(s, 1) {
			t.Errorf("cap %v h: tiers %v %v, want %v true", c.cap, p.Tier(s, 0), p.Tier(s, 1), c.upper0)
		}
		if IsClairvoyant(p) != (c.cap > 0) || (p.Name() == "tiered_packed_clairvoyant") != (c.cap > 0) {
			t.Errorf("cap %v h: clairvoyant %v, name %s", c.cap, IsClairvoyant(p), p.Name())
		}
		if err := p.Allocate(s, make([]float64, 4)); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		if err := (&TieredPackedPolicy{Weights: w, MaxUpperHours: bad}).Allocate(s, make([]float64, 4)); err == nil || !strings.Contains(err.Error(), "max_upper_remaining_h") {
			t.Errorf("cap %v: %v", bad, err)
		}
	}
	path := filepath.Join(t.TempDir(), "policy.json")
	if err := WriteTieredPolicy(path, &TieredPackedPolicy{Weights: w, LogRatio: r, MaxUpperHours: 8}, nil); err != nil {
		t.Fatal(err)
	}
	pol, err := AllocationPolicyByName(path)
	if err != nil {
		t.Fatal(err)
	}
	if tp, ok := pol.(*TieredPackedPolicy); !ok || tp.MaxUpperHours != 8 || tp.Clairvoyant || !IsClairvoyant(tp) {
		t.Fatalf("read back %T %+v", pol, pol)
	}
	if err := WriteTieredPolicy(path, &TieredPackedPolicy{Weights: w, MaxUpperHours: -2}, nil); err == nil {
		t.Error("cap -2 written")
	}
}

// TestTieredGuards: at 150 h, a 2-GPU gang (arrived at 0) and a
// single-GPU job (arrived at 100 h) have both had ten GPU-hours of
// service, so the default score puts both in the lower tier. The gang
// guard lifts the gang alone into the upper tier when it is shorter than
// the gang's age; the age guard lifts each job whose age exceeds it.
// Neither makes the policy clairvoyant, each survives the file, and a
// negative, NaN or infinite guard is refused, naming its field.
func TestTieredGuards(t *testing.T) {
	w, r := DefaultTieredParams(false)
	s := &RoundState{Time: 150 * 3600, Types: []string{"v100", "k80"}, Capacity: []int{2, 2},
		Jobs:       []RoundJob{{ID: 0, Scale: 2, Attained: 10 * 3600, StepsLeft: 100, Priority: 1}, {ID: 1, Scale: 1, Attained: 10 * 3600, StepsLeft: 100, Priority: 1, Arrival: 100 * 3600}},
		Throughput: []float64{2, 1, 2, 1}}
	type tiers struct {
		guard          float64
		upper0, upper1 bool
	}
	for _, g := range []struct {
		field string
		set   func(p *TieredPackedPolicy, h float64)
		get   func(p *TieredPackedPolicy) float64
		cases []tiers
	}{
		{"gang_guard_h", func(p *TieredPackedPolicy, h float64) { p.GangGuardHours = h }, func(p *TieredPackedPolicy) float64 { return p.GangGuardHours },
			[]tiers{{0, false, false}, {40, true, false}, {100, true, false}, {149.9, true, false}, {150, false, false}, {1000, false, false}}},
		{"age_guard_h", func(p *TieredPackedPolicy, h float64) { p.AgeGuardHours = h }, func(p *TieredPackedPolicy) float64 { return p.AgeGuardHours },
			[]tiers{{0, false, false}, {40, true, true}, {49.9, true, true}, {50, true, false}, {149.9, true, false}, {150, false, false}}},
	} {
		for _, c := range g.cases {
			p := &TieredPackedPolicy{Weights: w, LogRatio: r}
			g.set(p, c.guard)
			if p.Tier(s, 0) != c.upper0 || p.Tier(s, 1) != c.upper1 {
				t.Errorf("%s %v: tiers %v %v, want %v %v", g.field, c.guard, p.Tier(s, 0), p.Tier(s, 1), c.upper0, c.upper1)
			}
			if IsClairvoyant(p) || p.Name() != "tiered_packed" {
				t.Errorf("%s %v: clairvoyant %v, name %s", g.field, c.guard, IsClairvoyant(p), p.Name())
			}
			if err := p.Allocate(s, make([]float64, 4)); err != nil {
				t.Fatal(err)
			}
		}
		for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
			p := &TieredPackedPolicy{Weights: w}
			g.set(p, bad)
			if err := p.Allocate(s, make([]float64, 4)); err == nil || !strings.Contains(err.Error(), g.field) {
				t.Errorf("%s %v: %v", g.field, bad, err)
			}
		}
		path := filepath.Join(t.TempDir(), "policy.json")
		p := &TieredPackedPolicy{Weights: w, LogRatio: r}
		g.set(p, 100)
		if err := WriteTieredPolicy(path, p, nil); err != nil {
			t.Fatal(err)
		}
		pol, err := AllocationPolicyByName(path)
		if err != nil {
			t.Fatal(err)
		}
		if tp, ok := pol.(*TieredPackedPolicy); !ok || g.get(tp) != 100 || tp.GangGuardHours+tp.AgeGuardHours != 100 || IsClairvoyant(tp) {
			t.Fatalf("%s: read back %T %+v", g.field, pol, pol)
		}
		g.set(p, -2)
		if err := WriteTieredPolicy(path, p, nil); err == nil {
			t.Errorf("%s -2 written", g.field)
		}
	}
}

// TestTieredTieDeficit: the tiered policy hands its deficit weight to the
// LP (TestMaxMinPackedTieDeficit's state, where the tie-break decides who
// gets the V100: the default score puts all four jobs, with three hours
// of service each, in one tier), keeps it through the file, and refuses
// it out of range.
func TestTieredTieDeficit(t *testing.T) {
	w, r := DefaultTieredParams(false)
	s := round([]string{"v100", "k80"}, []int{1, 2}, [][]float64{{4, 1}, {1, 1}, {4, 1}, {1, 1}})
	s.Time = 3600
	for i := range s.Jobs {
		s.Jobs[i].Type, s.Jobs[i].Arrival, s.Jobs[i].Attained = i, 3600, 3*3600
	}
	s.Jobs[1].Priority, s.Jobs[3].Priority = 2, 2
	s.Jobs[2].Arrival = 0
	x := make([]float64, 8)
	p := &TieredPackedPolicy{Weights: w, LogRatio: r, TieDeficit: 1}
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	if math.Abs(x[4]-11.0/16) > 1e-9 || math.Abs(x[0]-5.0/16) > 1e-9 {
		t.Fatalf("x = %v, want the V100 11/16 to job 2 (behind), 5/16 to job 0", x)
	}
	for _, bad := range []float64{-1, math.NaN(), 2e4} {
		if err := (&TieredPackedPolicy{Weights: w, TieDeficit: bad}).Allocate(s, x); err == nil || !strings.Contains(err.Error(), "tie_deficit_weight") {
			t.Errorf("weight %v: %v", bad, err)
		}
	}
	path := filepath.Join(t.TempDir(), "policy.json")
	if err := WriteTieredPolicy(path, &TieredPackedPolicy{Weights: w, LogRatio: r, TieDeficit: 5}, nil); err != nil {
		t.Fatal(err)
	}
	if pol, err := AllocationPolicyByName(path); err != nil || pol.(*TieredPackedPolicy).TieDeficit != 5 || IsClairvoyant(pol) {
		t.Fatalf("read back %+v (%v)", pol, err)
	}
}

// TestTieredPolicyFile: a written file loads by path as the same policy;
// malformed files are refused with the reason.
func TestTieredPolicyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.json")
	w := []float64{0.5, -1, 0.25, 0, 0, 0.125, -0.5}
	if err := WriteTieredPolicy(path, &TieredPackedPolicy{Weights: w, LogRatio: 1.5, LoadSlope: -0.75}, map[string]any{"by": "test"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{path, dir} {
		pol, err := AllocationPolicyByName(name)
		if err != nil {
			t.Fatal(err)
		}
		tp, ok := pol.(*TieredPackedPolicy)
		if !ok || !slices.Equal(tp.Weights, w) || tp.LogRatio != 1.5 || tp.LoadSlope != -0.75 || tp.Clairvoyant {
			t.Fatalf("%s read back %T %+v", name, pol, pol)
		}
		if _, packs := pol.(PackingPolicy); !packs {
			t.Fatal("a tiered policy does not pack")
		}
	}
	if err := WriteTieredPolicy(path, &TieredPackedPolicy{Weights: w[:2], LogRatio: 1}, nil); err == nil {
		t.Error("2 weights written")
	}
	if err := WriteTieredPolicy(path, &TieredPackedPolicy{Weights: w, LogRatio: 11}, nil); err == nil {
		t.Error("ratio 11 written")
	}
	if err := WriteTieredPolicy(path, &TieredPackedPolicy{Weights: w, LoadSlope: math.Inf(-1)}, nil); err == nil {
		t.Error("slope -Inf written")
	}
	feats := `["bias","log_attained","log_age","log2_scale","log_spread","served_frac","log_load"]`
	for name, c := range map[string]struct{ in, want string }{
		"kind":     {`{"kind":"x"}`, "kind"},
		"features": {`{"kind":"tegrl-tiered-packed-allocation","features":["bias"],"weights":[1]}`, "features"},
		"count":    {`{"kind":"tegrl-tiered-packed-allocation","features":` + feats + `,"weights":[1]}`, "1 weights for 7"},
		"ratio":    {`{"kind":"tegrl-tiered-packed-allocation","features":` + feats + `,"weights":[1,0,0,0,0,0,0],"log_priority_ratio":40}`, "log_priority_ratio"},
		"slope":    {`{"kind":"tegrl-tiered-packed-allocation","features":` + feats + `,"weights":[1,0,0,0,0,0,0],"log_ratio_load_slope":-11}`, "log_ratio_load_slope -11"},
		"cap":      {`{"kind":"tegrl-tiered-packed-allocation","features":` + feats + `,"weights":[1,0,0,0,0,0,0],"max_upper_remaining_h":-1}`, "max_upper_remaining_h -1"},
		"guard":    {`{"kind":"tegrl-tiered-packed-allocation","features":` + feats + `,"weights":[1,0,0,0,0,0,0],"gang_guard_h":-3}`, "gang_guard_h -3"},
		"tie":      {`{"kind":"tegrl-tiered-packed-allocation","features":` + feats + `,"weights":[1,0,0,0,0,0,0],"tie_deficit_weight":1e5}`, "tie_deficit_weight 100000"},
		"trailing": {`{"kind":"tegrl-tiered-packed-allocation"} {}`, "trailing"},
		"unknown":  {`{"kind":"tegrl-tiered-packed-allocation","pack":true}`, "unknown field"},
	} {
		if _, err := ParseTieredPolicy([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"kind":"tegrl-tiered-packed-allocation","features":`+feats+`,"weights":[1,0,0,0,0,0,0],"log_priority_ratio":40}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := AllocationPolicyByName(bad); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("bad file: %v", err)
	}
}

// TestTieredRunDeterministic: a short protocol run of the tiered policy
// gives the same JCTs twice, and its allocations are valid (the round
// mechanism checks them).
func TestTieredRunDeterministic(t *testing.T) {
	tab, err := GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	w, r := DefaultTieredParams(false)
	run := GavelRun{Policy: "tiered", Rate: 3, Seed: 4, New: func() AllocationPolicy { return &TieredPackedPolicy{Weights: w, LogRatio: r} },
		Round: RoundConfig{MeasureFrom: 100, MeasureTo: 200}}
	a, err := run.Run(tab)
	if err != nil {
		t.Fatal(err)
	}
	b, err := run.Run(tab)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.JCT) == 0 || !slices.Equal(a.JCT, b.JCT) {
		t.Fatalf("runs differ or measured nothing: %d and %d JCTs", len(a.JCT), len(b.JCT))
	}
}

// FuzzParseTieredPolicy: any input is refused with an error or gives a
// policy with one finite weight per feature, a ratio in range and a finite
// cap that is not negative (clairvoyant when positive), and a finite
// guard that is not negative, and a tie-break weight in range.
func FuzzParseTieredPolicy(f *testing.F) {
	f.Add([]byte(`{"kind":"tegrl-tiered-packed-allocation","features":["bias","log_attained","log_age","log2_scale","log_spread","served_frac","log_load"],"weights":[0.69,-1,0,0,0,0,0],"log_priority_ratio":1.39}`))
	f.Add([]byte(`{"kind":"tegrl-tiered-packed-allocation","features":["bias","log_attained","log_age","log2_scale","log_spread","served_frac","log_load","log_remaining_h"],"weights":[0.69,-1,0,0,0,0,0,0],"log_priority_ratio":-1e999}`))
	f.Add([]byte(`{"kind":"tegrl-tiered-packed-allocation","features":["bias","log_attained","log_age","log2_scale","log_spread","served_frac","log_load"],"weights":[0.69,-1,0,0,0,0,0],"max_upper_remaining_h":4}`))
	f.Add([]byte(`{"kind":"tegrl-tiered-packed-allocation","features":["bias","log_attained","log_age","log2_scale","log_spread","served_frac","log_load"],"weights":[0.69,-1,0,0,0,0,0],"gang_guard_h":100}`))
	f.Add([]byte(`{"kind":"tegrl-tiered-packed-allocation","features":["bias","log_attained","log_age","log2_scale","log_spread","served_frac","log_load"],"weights":[0.69,-1,0,0,0,0,0],"support":{"alone":[["A3C","v100"]],"pairs":[["A3C","LM (batch size 5)","k80"]]}}`))
	f.Add([]byte(`{"kind":"tegrl-tiered-packed-allocation","features":["bias","log_attained","log_age","log2_scale","log_spread","served_frac","log_load"],"weights":[0.69,-1,0,0,0,0,0],"support":{"alone":[],"pairs":[],"max_log_load":0.25,"above":{"alone":[["A3C","k80"]],"pairs":[],"max_log_load":1,"above":{"alone":[],"pairs":[]}}}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseTieredPolicy(b)
		if err != nil {
			return
		}
		if len(p.Weights) != len(TieredFeatureNames(p.Clairvoyant)) || !(math.Abs(p.LogRatio) <= maxTieredLogRatio) {
			t.Fatalf("%d weights, ratio %v", len(p.Weights), p.LogRatio)
		}
		if !(p.MaxUpperHours >= 0 && p.MaxUpperHours < math.Inf(1)) || IsClairvoyant(p) != (p.Clairvoyant || p.MaxUpperHours > 0) {
			t.Fatalf("cap %v, clairvoyant %v", p.MaxUpperHours, IsClairvoyant(p))
		}
		if !(p.GangGuardHours >= 0 && p.GangGuardHours < math.Inf(1)) || !(p.AgeGuardHours >= 0 && p.AgeGuardHours < math.Inf(1)) || !(p.TieDeficit >= 0 && p.TieDeficit <= MaxTieDeficit) {
			t.Fatalf("guards %v %v, tie weight %v", p.GangGuardHours, p.AgeGuardHours, p.TieDeficit)
		}
		for _, w := range p.Weights {
			if math.IsNaN(w) || math.IsInf(w, 0) {
				t.Fatalf("weight %v", w)
			}
		}
		// Support bands: at most MaxSupportBands, limits rising, only the
		// last one unbounded.
		k := 0
		for s := p.Support; s != nil; s = s.Above {
			if k++; k > MaxSupportBands || (s.Above != nil && !(s.Above.MaxLogLoad > s.MaxLogLoad)) ||
				!(math.Abs(s.MaxLogLoad) <= maxTieredLogRatio || (math.IsInf(s.MaxLogLoad, 1) && s.Above == nil)) {
				t.Fatalf("support band %d: limit %v", k, s.MaxLogLoad)
			}
		}
	})
}

// BenchmarkTieredAllocate is BenchmarkMaxMinPacked's rounds under the
// tiered policy with the default parameters, every other job in the upper
// tier: up to twice the LP's job classes.
func BenchmarkTieredAllocate(b *testing.B) {
	for _, n := range []int{10, 100, 300} {
		for _, tie := range []float64{0, 5} {
			b.Run(fmt.Sprintf("jobs=%d/tie=%g", n, tie), func(b *testing.B) { benchTiered(b, n, tie) })
		}
	}
}

// benchTiered is one BenchmarkTieredAllocate case: n jobs 100 s apart,
// each a third of the way through its steps, with tie-break weight tie.
func benchTiered(b *testing.B, n int, tie float64) {
	s := gavelPackedRound(b, n, 1)
	s.Time = float64(n) * 100
	for i := range s.Jobs {
		s.Jobs[i].Attained = float64(i%2) * 7200
		s.Jobs[i].Arrival = float64(i) * 100
		s.Jobs[i].StepsLeft = s.Jobs[i].StepsTotal * 2 / 3
	}
	x := make([]float64, len(s.Throughput))
	w, r := DefaultTieredParams(false)
	p := &TieredPackedPolicy{Weights: w, LogRatio: r, TieDeficit: tie}
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Allocate(s, x); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(p.Pairs(s))), "pairs")
	b.ReportMetric(float64(p.lp.lp.pivots), "pivots")
}

// TestShippedPolicyFiles: every allocation policy file in docs/policies
// loads, and the shipped tiered files carry their guards and tie-break
// weight.
func TestShippedPolicyFiles(t *testing.T) {
	paths, err := filepath.Glob("../docs/policies/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no policy files: %v", err)
	}
	for _, path := range paths {
		p, err := AllocationPolicyByName(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if tp, ok := p.(*TieredPackedPolicy); ok && filepath.Base(path) == "gavel-single-tiered.json" && tp.GangGuardHours != 100 {
			t.Errorf("%s: gang guard %v h, want 100", path, tp.GangGuardHours)
		}
		if tp, ok := p.(*TieredPackedPolicy); ok && filepath.Base(path) == "gavel-single-tiered-tail.json" &&
			(tp.GangGuardHours != 100 || tp.AgeGuardHours != 300 || tp.TieDeficit != 5 || IsClairvoyant(tp)) {
			t.Errorf("%s: guards %v %v h, tie weight %v, clairvoyant %v; want 100, 300, 5, false", path, tp.GangGuardHours, tp.AgeGuardHours, tp.TieDeficit, IsClairvoyant(tp))
		}
		// The student is the tail file's tiers over 45 alone and 20 pair
		// columns up to log_load 0.25 and 40 and 40 past it (tegrl
		// distill's defaults).
		if tp, ok := p.(*TieredPackedPolicy); ok && filepath.Base(path) == "gavel-single-tiered-student.json" &&
			(tp.Support == nil || tp.Support.Len() != 145 || tp.Support.MaxLogLoad != 0.25 || tp.Support.Above == nil || tp.Support.Above.Len() != 80 ||
				tp.AgeGuardHours != 300 || tp.TieDeficit != 5 || tp.LogRatio != 1.024529424974006) {
			t.Errorf("%s: support %v, age guard %v h, tie weight %v, log ratio %v", path, tp.Support, tp.AgeGuardHours, tp.TieDeficit, tp.LogRatio)
		}
	}
}
