package rl

import (
	"context"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/env"
)

// gavelMultiWeights are the committed gavel-multi policy's weights.
func gavelMultiWeights(t *testing.T) []float64 {
	t.Helper()
	p, err := env.AllocationPolicyByName("../docs/policies/gavel-multi.json")
	if err != nil {
		t.Fatal(err)
	}
	return p.(*env.ScoredPolicy).Weights
}

// TestRoundSamplerGreedyIsScored: the sampler's greedy limit allocates
// exactly as env.ScoredPolicy with the same weights, so PPO's weights mean
// the same policy when served.
func TestRoundSamplerGreedyIsScored(t *testing.T) {
	tab, err := env.GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	w := gavelMultiWeights(t)
	run := func(p env.AllocationPolicy) env.RoundResult {
		g := env.GavelRun{Policy: p.Name(), Rate: 2.4, Seed: 3, Multi: true, New: func() env.AllocationPolicy { return p }}
		r, err := g.Run(tab)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a := run(&env.ScoredPolicy{Weights: w})
	b := run(newRoundSampler(w, true, 1, 0))
	if !slices.Equal(a.JCT, b.JCT) || a.Rounds != b.Rounds || a.Moves != b.Moves || len(a.JCT) == 0 {
		t.Fatalf("greedy sampler differs from the scored policy: %.4f h %d rounds / %.4f h %d rounds", a.AvgJCTHours, a.Rounds, b.AvgJCTHours, b.Rounds)
	}
	// Sampling is not greedy, and is reproducible from its seed.
	c, c2 := run(newRoundSampler(w, false, 1, 0)), run(newRoundSampler(w, false, 1, 0))
	if slices.Equal(a.JCT, c.JCT) {
		t.Error("sampling gave the greedy run")
	}
	if !slices.Equal(c.JCT, c2.JCT) {
		t.Error("the same seed sampled differently")
	}
}

// recordedPoints samples a short run recording every allocation.
func recordedPoints(t *testing.T, w []float64) []roundPoint {
	t.Helper()
	tab, err := env.GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	sm := newRoundSampler(w, false, 9, 1)
	g := env.GavelRun{Policy: "s", Rate: 2.4, Seed: 1, Multi: true, New: func() env.AllocationPolicy { return sm },
		Round: env.RoundConfig{MaxSeconds: 200 * 3600}}
	if _, err := g.Run(tab); err != nil {
		t.Fatal(err)
	}
	if len(sm.points) < 20 || len(sm.points) != len(sm.calls) {
		t.Fatalf("%d points of %d allocations", len(sm.points), len(sm.calls))
	}
	return sm.points
}

// TestRoundPointGradMatchesBehaviour: replayed under the weights that
// sampled it, every choice has the log-probability the sampler recorded
// (ratio 1, KL 0), and some allocations end with stop.
func TestRoundPointGradMatchesBehaviour(t *testing.T) {
	w := gavelMultiWeights(t)
	w[0] -= 8 // a lower bias makes stop likely enough to be sampled
	pts := recordedPoints(t, w)
	var buf roundGradBuf
	stops, choices := 0, 0
	for i := range pts {
		pt := &pts[i]
		pt.adv = 1
		g := make([]float64, len(w))
		obj, _, kl, clipped := roundPointGrad(pt, w, 0.2, 0, g, &buf)
		if math.Abs(kl) > 1e-9*float64(len(pt.seq)) || clipped != 0 || math.Abs(obj-float64(len(pt.seq))) > 1e-9*float64(len(pt.seq)) {
			t.Fatalf("point %d: kl %v, clipped %d, surrogate %v for %d choices", i, kl, clipped, obj, len(pt.seq))
		}
		choices += len(pt.seq)
		if n := len(pt.seq); n > 0 && pt.seq[n-1] == -1 {
			stops++
		}
	}
	if stops == 0 || choices < 100 {
		t.Fatalf("%d stops in %d choices", stops, choices)
	}
}

// TestRoundPointGradFiniteDifference checks the analytic gradient of the
// surrogate plus the entropy bonus against central differences, at
// weights away from the behaviour's (ratios not 1) with the clip wide
// enough that no ratio is clipped.
func TestRoundPointGradFiniteDifference(t *testing.T) {
	w := gavelMultiWeights(t)
	w[0] -= 8
	pts := recordedPoints(t, w)[:12]
	for i := range pts {
		pts[i].adv = 1.3 - 0.4*float64(i%5)
	}
	u := slices.Clone(w)
	for k := range u {
		u[k] += 0.05 * float64(k%3-1)
	}
	const clip, ent = 100, 0.3
	f := func(v []float64) float64 {
		var buf roundGradBuf
		s := 0.0
		for i := range pts {
			o, h, _, _ := roundPointGrad(&pts[i], v, clip, ent, make([]float64, len(v)), &buf)
			s += o + ent*h
		}
		return s
	}
	g := make([]float64, len(u))
	var buf roundGradBuf
	for i := range pts {
		if _, _, _, c := roundPointGrad(&pts[i], u, clip, ent, g, &buf); c != 0 {
			t.Fatalf("point %d: %d choices clipped", i, c)
		}
	}
	for k := range u {
		const h = 1e-5
		p, m := slices.Clone(u), slices.Clone(u)
		p[k] += h
		m[k] -= h
		num := (f(p) - f(m)) / (2 * h)
		if math.Abs(num-g[k]) > 1e-5*math.Max(1, math.Abs(num)) {
			t.Errorf("weight %d (%s): analytic %.8g, numeric %.8g", k, env.ScoredFeatures[k], g[k], num)
		}
	}
}

// TestDiscountedCost: minus the discounted job-hours from each bin on.
func TestDiscountedCost(t *testing.T) {
	calls := []roundCall{{t: 0, jobs: 2}, {t: 720, jobs: 4}}
	g := discountedCost(calls, 4, 360, 0.5)
	// Jobs per bin 2, 2, 4, 4; 0.1 h per bin.
	want := []float64{-0.2 - 0.5*0.2 - 0.25*0.4 - 0.125*0.4, -0.2 - 0.5*0.4 - 0.25*0.4, -0.4 - 0.5*0.4, -0.4}
	for i := range want {
		if math.Abs(g[i]-want[i]) > 1e-12 {
			t.Fatalf("got %v, want %v", g, want)
		}
	}
}

// tinyPPO is a two-iteration PPO on one protocol point.
func tinyPPO() RoundPPOConfig {
	cfg := DefaultRoundPPOConfig()
	cfg.Rates, cfg.Seeds, cfg.Iterations, cfg.Rollouts, cfg.Epochs = []float64{2.0}, []uint64{100}, 2, 2, 2
	return cfg
}

// TestTrainRoundPPODeterministic: the same seed gives the same weights
// whatever the number of workers, the update moves the weights, and the
// result is never worse on the training runs than the starting weights.
func TestTrainRoundPPODeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 12 protocol runs")
	}
	a, b := tinyPPO(), tinyPPO()
	a.Workers, b.Workers = 1, 2
	ra, err := TrainRoundPPO(context.Background(), a, nil)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := TrainRoundPPO(context.Background(), b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ra.Weights, rb.Weights) || ra.Fitness != rb.Fitness || !slices.Equal(ra.Curve[1].Weights, rb.Curve[1].Weights) {
		t.Fatalf("workers change the result: %v %v / %v %v", ra.Weights, ra.Fitness, rb.Weights, rb.Fitness)
	}
	c0 := ra.Curve[0]
	if len(ra.Curve) != 2 || ra.Fitness > c0.Fitness || c0.Samples == 0 || c0.Choices < c0.Samples || !(c0.Entropy > 0) {
		t.Fatalf("curve %+v, best %v", ra.Curve, ra.Fitness)
	}
	if slices.Equal(c0.Weights, env.DefaultScoredWeights()) {
		t.Error("the update left the weights as they were")
	}
}

func TestTrainRoundPPOErrors(t *testing.T) {
	for _, c := range []struct {
		mod  func(*RoundPPOConfig)
		want string
	}{
		{func(c *RoundPPOConfig) { c.Rollouts = 1 }, "rollouts >= 2"},
		{func(c *RoundPPOConfig) { c.RecordProb = 0 }, "record probability"},
		{func(c *RoundPPOConfig) { c.LR = math.NaN() }, "lr must be positive"},
		{func(c *RoundPPOConfig) { c.Rates = nil }, "rates and seeds"},
		{func(c *RoundPPOConfig) { c.Init = []float64{1} }, "1 initial weights"},
		{func(c *RoundPPOConfig) { c.Rates = []float64{9} }, "stops at the bound"},
	} {
		cfg := tinyPPO()
		c.mod(&cfg)
		if _, err := TrainRoundPPO(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

// TestTrainGavelMethodErrors: --method is checked before anything runs.
func TestTrainGavelMethodErrors(t *testing.T) {
	for _, c := range []struct {
		preset, method, scenarios, offline string
		clairvoyant, pack                  bool
		want                               string
	}{
		{"small", "ppo", "", "", false, false, "--method: only the gavel presets"},
		{"gavel", "sgd", "", "", false, false, `--method "sgd": want es or ppo`},
		{"gavel", "ppo", "", "", true, false, "--method ppo: trains the non-clairvoyant, unpacked policy"},
		{"gavel-single", "ppo", "openb/16-multi@1.2", "", false, false, "--method ppo: trains the non-clairvoyant, unpacked policy"},
		{"gavel-single", "ppo", "", "", false, true, "--method ppo: trains the non-clairvoyant, unpacked policy"},
		{"gavel", "", "", "runs/x", false, true, "--pack: offline learning fits the unpacked policy"},
		{"small", "", "", "", false, true, "--pack: only the gavel presets"},
	} {
		o := DefaultTrainOptions()
		o.Preset, o.Out, o.GavelMethod, o.GavelScenarios, o.Clairvoyant, o.Pack = c.preset, t.TempDir(), c.method, c.scenarios, c.clairvoyant, c.pack
		o.Offline = c.offline
		if err := o.Run(context.Background(), nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--preset %s --method %s --pack %v: %v, want %q", c.preset, c.method, c.pack, err, c.want)
		}
	}
}

// TestTrainRoundPPOActors: actors over NATS or channels sample the same
// rollouts as the in-process workers, so the training is the same.
func TestTrainRoundPPOActors(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 18 protocol runs")
	}
	local := tinyPPO()
	local.Iterations = 1
	want, err := TrainRoundPPO(context.Background(), local, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range []string{"nats", "chan"} {
		cfg := local
		cfg.Actors, cfg.Transport = 3, tr
		got, err := TrainRoundPPO(context.Background(), cfg, nil)
		if err != nil {
			t.Fatal(tr, err)
		}
		if !slices.Equal(got.Curve[0].Weights, want.Curve[0].Weights) || got.Curve[0].Samples != want.Curve[0].Samples {
			t.Errorf("%s actors: weights %v, in-process %v", tr, got.Curve[0].Weights, want.Curve[0].Weights)
		}
		// Two rollouts of one run, one chunk each; none lost.
		if st := got.Transport; st == nil || st.Delivered < 2 || st.LostSegments != 0 || want.Transport != nil {
			t.Errorf("%s actors: transport counters %+v (in-process: %+v)", tr, got.Transport, want.Transport)
		}
	}
	bad := local
	bad.Actors, bad.Transport = 1, "carrier-pigeon"
	if _, err := TrainRoundPPO(context.Background(), bad, nil); err == nil || !strings.Contains(err.Error(), "want 0 actors") {
		t.Errorf("transport carrier-pigeon: %v", err)
	}
}

// sampledRollout is a short sampled run, every allocation recorded.
func sampledRollout(t testing.TB) roundRollout {
	tab, err := env.GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	w := env.DefaultScoredWeights()
	w[0] = 2 // stop is sampled too
	sm := newRoundSampler(w, false, 4, 1)
	g := env.GavelRun{Policy: "s", Rate: 2.4, Seed: 2, Multi: true, New: func() env.AllocationPolicy { return sm },
		Round: env.RoundConfig{MaxSeconds: 60 * 3600}}
	r, err := g.Run(tab)
	if err != nil {
		t.Fatal(err)
	}
	return roundRollout{index: 5, simS: r.SimSeconds, avgJCT: r.AvgJCTHours, saturated: r.Saturated, calls: sm.calls, points: sm.points}
}

// TestRoundWireRoundTrip: a rollout cut into chunks decodes to itself,
// whatever the chunk size.
func TestRoundWireRoundTrip(t *testing.T) {
	r := sampledRollout(t)
	if len(r.points) < 10 {
		t.Fatalf("%d points", len(r.points))
	}
	for _, limit := range []int{1, 40 << 10, roundChunkBytes} {
		chunks := encodeRoundRollout(&r, limit)
		var got roundRollout
		for i, b := range chunks {
			c, err := decodeRoundChunk(b, env.NumScoredFeatures)
			if err != nil {
				t.Fatalf("limit %d chunk %d: %v", limit, i, err)
			}
			if c.rollout != 5 || c.chunk != i || c.chunks != len(chunks) {
				t.Fatalf("limit %d: chunk %d/%d of rollout %d, want %d/%d", limit, c.chunk, c.chunks, c.rollout, i, len(chunks))
			}
			if c.head != nil {
				got = *c.head
			}
			got.points = append(got.points, c.points...)
		}
		if limit == 1 && len(chunks) != len(r.points) {
			t.Errorf("limit 1: %d chunks for %d points", len(chunks), len(r.points))
		}
		if got.simS != r.simS || got.saturated != r.saturated || !slices.Equal(got.calls, r.calls) || len(got.points) != len(r.points) {
			t.Fatalf("limit %d: outcome or allocations differ", limit)
		}
		for i := range r.points {
			a, b := &r.points[i], &got.points[i]
			if a.t != b.t || a.dim != b.dim || !slices.Equal(a.x, b.x) || !slices.Equal(a.job, b.job) || !slices.Equal(a.typ, b.typ) ||
				!slices.Equal(a.scale, b.scale) || !slices.Equal(a.cap, b.cap) || !slices.Equal(a.seq, b.seq) || !slices.Equal(a.logp, b.logp) {
				t.Fatalf("limit %d: point %d differs", limit, i)
			}
		}
	}
	// A chunk with a choice that was not allocatable is refused.
	b := encodeRoundRollout(&roundRollout{points: []roundPoint{{dim: 1, x: []float64{1, 1}, job: []int32{0, 0}, typ: []int32{0, 0}, scale: []int32{1, 1},
		cap: []int32{4}, seq: []int32{0, 1}, logp: []float64{-1, -1}}}}, roundChunkBytes)[0]
	if _, err := decodeRoundChunk(b, 1); err == nil || !strings.Contains(err.Error(), "not allocatable") {
		t.Errorf("a job chosen twice: %v", err)
	}
}

// FuzzRoundChunk: the learner's decoder of actor segments never panics,
// and whatever it accepts replays without a panic.
func FuzzRoundChunk(f *testing.F) {
	r := sampledRollout(f)
	r.points = r.points[:3]
	for _, b := range encodeRoundRollout(&r, 1) {
		f.Add(b)
	}
	f.Add([]byte("RPPO\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeRoundChunk(b, env.NumScoredFeatures)
		if err != nil {
			return
		}
		var buf roundGradBuf
		w := env.DefaultScoredWeights()
		for i := range c.points {
			roundPointGrad(&c.points[i], w, 0.2, 0.01, make([]float64, len(w)), &buf)
		}
	})
}

// TestRoundPointGradUnderflow: after a choice of logit 800, the one pair
// left (logit 1) and stop underflow against it; the softmax is rebased
// and the second choice's log-probability is exact.
func TestRoundPointGradUnderflow(t *testing.T) {
	pt := &roundPoint{dim: 1, x: []float64{800, 1}, job: []int32{0, 1}, typ: []int32{0, 0}, scale: []int32{1, 1}, cap: []int32{2},
		seq: []int32{0, 1}, logp: []float64{0, 0}, adv: 1}
	var buf roundGradBuf
	_, _, kl, _ := roundPointGrad(pt, []float64{1}, 0.2, 0, make([]float64, 1), &buf)
	// kl = Σ (0 - logp): the first choice has logp 0 (to 1e-300), the
	// second 1 - log(e + 1).
	if want := -(1 - math.Log(math.E+1)); math.Abs(kl-want) > 1e-12 {
		t.Fatalf("kl %v, want %v", kl, want)
	}
}

// TestTrainGavelPPOFlagErrors: --actors and --transport are checked
// before anything is written.
func TestTrainGavelPPOFlagErrors(t *testing.T) {
	for _, c := range []struct {
		actors    int
		transport string
		want      string
	}{
		{-1, "nats", "--actors -1"},
		{2, "bogus", `--transport "bogus"`},
	} {
		o := DefaultTrainOptions()
		o.Preset, o.Out, o.GavelMethod, o.Actors, o.Transport = "gavel", t.TempDir()+"/out", "ppo", c.actors, c.transport
		o.Set = func(f string) bool { return f == "actors" }
		if err := o.Run(context.Background(), nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--actors %d --transport %s: %v, want %q", c.actors, c.transport, err, c.want)
		}
		if _, err := os.Stat(o.Out); err == nil {
			t.Errorf("--actors %d --transport %s: %s was created", c.actors, c.transport, o.Out)
		}
	}
}
