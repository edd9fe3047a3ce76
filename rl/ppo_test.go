package rl

import (
	"math"
	"strings"
	"testing"
)

func near32(t *testing.T, what string, got []float32, want ...float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Abs(float64(got[i])-want[i]) > 1e-5*max(1, math.Abs(want[i])) {
			t.Fatalf("%s = %v, want %v", what, got, want)
		}
	}
}

// TestGAE checks a three-step trajectory with a terminal in the middle
// against the recursion computed by hand.
func TestGAE(t *testing.T) {
	r := []float32{1, 2, 3}
	v := []float32{0.5, 1, 1.5}
	d := []bool{false, true, false}
	adv, ret := make([]float32, 3), make([]float32, 3)
	g, l := 0.9, 0.8
	GAE(adv, ret, r, v, d, 2, g, l)
	d2 := 3 + g*2 - 1.5 // bootstrapped
	d1 := 2 - 1.0       // terminal: no bootstrap, no trace
	d0 := 1 + g*1 - 0.5
	a2, a1 := d2, d1
	a0 := d0 + g*l*a1
	near32(t, "adv", adv, a0, a1, a2)
	near32(t, "ret", ret, a0+0.5, a1+1, a2+1.5)
}

// TestVTraceOnPolicy: with π = μ, V-trace targets are GAE's λ-returns, and
// with λ = 1 its advantages are GAE's advantages.
func TestVTraceOnPolicy(t *testing.T) {
	r := []float32{1, -2, 0.5, 3, 1}
	v := []float32{0.3, -1, 2, 0.1, 0.7}
	d := []bool{false, false, true, false, false}
	zero := make([]float32, 5)
	for _, lambda := range []float64{0.95, 1} {
		adv, ret := make([]float32, 5), make([]float32, 5)
		GAE(adv, ret, r, v, d, 0.4, 0.99, lambda)
		vs, pg := make([]float32, 5), make([]float32, 5)
		VTrace(vs, pg, r, v, d, zero, 0.4, 0.99, lambda, 1, 1)
		near32(t, "vs", vs, f64s(ret)...)
		if lambda == 1 {
			near32(t, "pg advantage", pg, f64s(adv)...)
		}
	}
}

// TestVTraceTruncation: a two-step segment with importance ratios 2 and
// 0.5, computed by hand: ρ̄ = c̄ = 1 truncate the first ratio to 1.
func TestVTraceTruncation(t *testing.T) {
	r := []float32{1, 2}
	v := []float32{0.5, 1}
	d := []bool{false, false}
	lr := []float32{float32(math.Log(2)), float32(math.Log(0.5))}
	vs, pg := make([]float32, 2), make([]float32, 2)
	g := 0.9
	VTrace(vs, pg, r, v, d, lr, 3, g, 1, 1, 1)
	// t=1: ρ = c = 0.5. δ1 = 0.5·(2 + 0.9·3 - 1) = 1.85; vs1 = 1 + 1.85.
	vs1 := 1 + 0.5*(2+g*3-1)
	// t=0: ρ = c = 1. δ0 = 1 + 0.9·1 - 0.5 = 1.4; vs0 = 0.5 + 1.4 + 0.9·1·(vs1 - 1).
	vs0 := 0.5 + (1 + g*1 - 0.5) + g*(vs1-1)
	near32(t, "vs", vs, vs0, vs1)
	near32(t, "pg", pg, 1*(1+g*vs1-0.5), 0.5*(2+g*3-1))
}

func f64s(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// bandit is a two-armed problem stored in an MLPActorCritic with a
// constant input.
func banditBatch(m *MLPActorCritic, n int, good int) *Batch {
	m.Reset()
	b := &Batch{}
	for i := 0; i < n; i++ {
		a := i % 2
		m.Store([]float32{1, 0, 0, 0}, a)
		adv := float32(-1)
		if a == good {
			adv = 1
		}
		b.OldLogP = append(b.OldLogP, float32(math.Log(0.5)))
		b.Values = append(b.Values, 0)
		b.Adv = append(b.Adv, adv)
		b.Returns = append(b.Returns, adv)
	}
	return b
}

// TestPPOUpdateImproves: an update moves probability to the arm with the
// positive advantage and the value towards the returns, and is
// deterministic given the seed.
func TestPPOUpdateImproves(t *testing.T) {
	run := func() (float64, UpdateStats) {
		m := NewMLPActorCritic(4, 2, []int{8}, 3)
		cfg := CartPoleConfig()
		cfg.LR = 1e-2
		p, err := NewPPO(m, cfg, 5)
		if err != nil {
			t.Fatal(err)
		}
		b := banditBatch(m, 64, 1)
		st, err := p.Update(b, cfg.LR)
		if err != nil {
			t.Fatal(err)
		}
		tp := p.tp
		tp.Reset()
		logp, _, _ := m.Evaluate(tp, []int{1})
		return math.Exp(logp.Item()), st
	}
	p1, st := run()
	if p1 <= 0.5 {
		t.Fatalf("P(good arm) = %.4f after an update, want > 0.5 (%+v)", p1, st)
	}
	if st.Epochs != 4 || st.Minibatches != 16 || st.ClipFrac < 0 || st.ClipFrac > 1 {
		t.Fatalf("stats %+v", st)
	}
	p2, st2 := run()
	if p1 != p2 || st != st2 {
		t.Fatalf("not deterministic: %v %+v vs %v %+v", p1, st, p2, st2)
	}
}

// TestPPOKLEarlyStop: a learning rate far too high makes the approximate
// KL overshoot 1.5·target and the update stops before its last epoch.
func TestPPOKLEarlyStop(t *testing.T) {
	m := NewMLPActorCritic(4, 2, []int{8}, 3)
	cfg := CartPoleConfig()
	cfg.TargetKL = 0.001
	cfg.MaxGradNorm = 100
	p, err := NewPPO(m, cfg, 5)
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Update(banditBatch(m, 64, 0), 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if st.Epochs >= cfg.Epochs || st.ApproxKL <= 1.5*cfg.TargetKL {
		t.Fatalf("no early stop: %+v", st)
	}
}

// TestPPORejectsBadBatches: NaN and ragged batches are refused with a
// message, and the parameters are untouched.
func TestPPORejectsBadBatches(t *testing.T) {
	m := NewMLPActorCritic(4, 2, []int{8}, 3)
	p, err := NewPPO(m, CartPoleConfig(), 5)
	if err != nil {
		t.Fatal(err)
	}
	before := append([]float32(nil), m.Params().At(0).Data...)
	b := banditBatch(m, 8, 0)
	b.Adv[3] = float32(math.NaN())
	if _, err := p.Update(b, 1e-3); err == nil || !strings.Contains(err.Error(), "sample 3") {
		t.Fatalf("NaN batch: err %v", err)
	}
	b = banditBatch(m, 8, 0)
	b.Returns = b.Returns[:7]
	if _, err := p.Update(b, 1e-3); err == nil || !strings.Contains(err.Error(), "differ") {
		t.Fatalf("ragged batch: err %v", err)
	}
	for i, v := range m.Params().At(0).Data {
		if v != before[i] {
			t.Fatal("parameters changed by a refused batch")
		}
	}
	bad := CartPoleConfig()
	bad.Gamma = 1.5
	if _, err := NewPPO(m, bad, 1); err == nil {
		t.Fatal("gamma 1.5 accepted")
	}
}

// TestExplainedVariance checks the definition on a hand case.
func TestExplainedVariance(t *testing.T) {
	if ev := explainedVariance([]float32{1, 2, 3}, []float32{1, 2, 3}); ev != 1 {
		t.Fatalf("perfect critic: %v", ev)
	}
	// R = (1,2,3), V = 2: R-V = (-1,0,1), Var equal to Var[R]: 0.
	if ev := explainedVariance([]float32{2, 2, 2}, []float32{1, 2, 3}); math.Abs(ev) > 1e-12 {
		t.Fatalf("constant critic: %v", ev)
	}
}
