package rl

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
)

// tinyES is a two-iteration ES on one short protocol point.
func tinyES() RoundESConfig {
	cfg := DefaultRoundESConfig()
	cfg.Rates, cfg.Seeds, cfg.Iterations, cfg.Pairs = []float64{2.0}, []uint64{100}, 2, 2
	return cfg
}

// trainOnOneAndTwoWorkers trains cfg with 1 and with 2 workers, fails t
// unless both give the same weights and fitness, and returns the result.
func trainOnOneAndTwoWorkers(t *testing.T, cfg RoundESConfig) RoundESResult {
	t.Helper()
	a, b := cfg, cfg
	a.Workers, b.Workers = 1, 2
	ra, err := TrainRoundES(context.Background(), a, nil)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := TrainRoundES(context.Background(), b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ra.Weights, rb.Weights) || ra.Fitness != rb.Fitness {
		t.Fatalf("workers change the result: %v %v / %v %v", ra.Weights, ra.Fitness, rb.Weights, rb.Fitness)
	}
	return ra
}

// TestTrainRoundESDeterministic: the same seed gives the same weights
// whatever the number of workers; the result is never worse on the
// training runs than the starting weights.
func TestTrainRoundESDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 12 protocol runs")
	}
	ra := trainOnOneAndTwoWorkers(t, tinyES())
	if len(ra.Curve) != 2 || ra.Fitness > ra.Curve[0].Fitness {
		t.Fatalf("curve %+v, best %v", ra.Curve, ra.Fitness)
	}
	if math.IsNaN(ra.Fitness) || ra.Fitness <= 0 {
		t.Fatalf("fitness %v", ra.Fitness)
	}
	c := tinyES()
	c.Seed = 7
	rc, err := TrainRoundES(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(rc.Curve[0].Weights, ra.Curve[0].Weights) {
		t.Error("another seed, the same perturbations")
	}
}

func TestTrainRoundESErrors(t *testing.T) {
	cfg := tinyES()
	cfg.Init = []float64{1}
	if _, err := TrainRoundES(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), "initial weights") {
		t.Errorf("short init: %v", err)
	}
	cfg = tinyES()
	cfg.Rates = []float64{9}
	if _, err := TrainRoundES(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), "bound") {
		t.Errorf("baseline above capacity: %v", err)
	}
	o := DefaultTrainOptions()
	o.Preset, o.Out = "gavel", t.TempDir()
	o.Set = func(f string) bool { return f == "lr" }
	if err := o.Run(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "--lr") {
		t.Errorf("a PPO flag on --preset gavel: %v", err)
	}
	o.Set = nil
	for _, c := range []struct {
		preset, rates, scenarios string
		clairvoyant              bool
		want                     string
	}{
		{"gavel", "abc", "", false, "--rates: rates"},
		{"gavel-single", "0", "", false, "--rates: rates"},
		{"small", "2.0", "", false, "--rates: only the gavel presets"},
		{"small", "", "", true, "--clairvoyant: only the gavel presets"},
		{"small", "", "openb/16-multi@1", false, "--train-scenarios: only the gavel presets"},
		{"gavel", "", "openb/16-multi", false, "--train-scenarios: \"openb/16-multi\" is not"},
	} {
		o.Preset, o.GavelRates, o.GavelScenarios, o.Clairvoyant = c.preset, c.rates, c.scenarios, c.clairvoyant
		if err := o.Run(context.Background(), nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--preset %s --rates %q --train-scenarios %q --clairvoyant=%v: %v, want %q", c.preset, c.rates, c.scenarios, c.clairvoyant, err, c.want)
		}
	}
}

func TestParseRoundESScenarios(t *testing.T) {
	got, err := ParseRoundESScenarios("openb/16-multi@1.2:7, spot/8-single@0.6", []uint64{100, 101})
	want := []RoundESScenario{{"openb/16-multi", 1.2, 7}, {"spot/8-single", 0.6, 100}, {"spot/8-single", 0.6, 101}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("%v %v, want %v", got, err, want)
	}
	for spec, msg := range map[string]string{"openb/16-multi": "CLUSTER-WORKLOAD@LOAD", "mars-multi@1": "unknown cluster",
		"openb-multi@0": "not in (0, 100)", "openb-multi@1:x": "seed"} {
		if _, err := ParseRoundESScenarios(spec, []uint64{1}); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v, want %q", spec, err, msg)
		}
	}
}

// TestTrainRoundESScenario: a scenario run counts in the fitness like a
// protocol run: the baseline's own weights score exactly 1 on it.
func TestTrainRoundESScenario(t *testing.T) {
	cfg := tinyES()
	cfg.Scenarios = []RoundESScenario{{Scenario: "openb/16-multi", Load: 0.5, Seed: 3}}
	tab, err := env.GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	g := len(cfg.Rates) * len(cfg.Seeds)
	b, err := cfg.runAt(tab, g, nil)
	if err != nil || b.atBound || !(b.avg > 0) || !(b.p99 >= b.avg) {
		t.Fatalf("baseline on the scenario: %+v %v", b, err)
	}
	w := env.DefaultScoredWeights()
	rw, err := cfg.runAt(tab, g, w)
	if err != nil {
		t.Fatal(err)
	}
	m, err := report.RunGPU(report.GPURunConfig{Scenario: "openb/16-multi", Load: 0.5, Seed: 3,
		New: func() env.AllocationPolicy { return &env.ScoredPolicy{Weights: w} }})
	if err != nil || m.AvgJCT == nil || *m.AvgJCT != rw.avg || *m.P99JCT != rw.p99 {
		t.Fatalf("scored run %+v, RunGPU %+v %v", rw, m, err)
	}
	if name := cfg.runName(g); name != "openb/16-multi at load 0.50 seed 3" {
		t.Errorf("run name %q", name)
	}
}

// TestRoundESRelative: a run scores its average JCT over the baseline's,
// plus TailWeight times its p99's excess over the baseline's (none for a
// shorter tail), at most Penalty; a run at the bound scores Penalty.
func TestRoundESRelative(t *testing.T) {
	base := runJCT{avg: 20, p99: 200}
	cfg := RoundESConfig{Penalty: 5}
	for _, c := range []struct {
		tail float64
		r    runJCT
		want float64
	}{
		{0, runJCT{avg: 19, p99: 300}, 0.95},
		{0.5, runJCT{avg: 19, p99: 300}, 0.95 + 0.25},
		{0.5, runJCT{avg: 19, p99: 150}, 0.95},
		{0.5, runJCT{avg: 19, p99: 200}, 0.95},
		{2, runJCT{avg: 19, p99: 1000}, 5},
		{0.5, runJCT{atBound: true}, 5},
	} {
		cfg.TailWeight = c.tail
		if got := cfg.relative(c.r, base); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("tail %v, run %+v: %v, want %v", c.tail, c.r, got, c.want)
		}
	}
}

func TestCentredRanks(t *testing.T) {
	got := centredRanks([]float64{3, 1, 2})
	if want := []float64{0.5, -0.5, 0}; !slices.Equal(got, want) {
		t.Fatalf("ranks %v, want %v", got, want)
	}
}

// TestRoundESPack: with Pack the candidates are packed scored policies,
// and at 5.8 jobs/h single-GPU, where GPUs are short, the same weights
// finish with a lower average JCT packed than unpacked.
func TestRoundESPack(t *testing.T) {
	if testing.Short() {
		t.Skip("protocol runs")
	}
	cfg := DefaultRoundESConfigSingle()
	cfg.Rates, cfg.Seeds = []float64{5.8}, []uint64{100}
	w := []float64{9.85, -0.79, 1.41, -0.14, 1.62, 0.59, -0.57, 0.38, -0.87, 0.74}
	if _, ok := cfg.policy(w).(env.PackingPolicy); ok {
		t.Fatal("unpacked config gives a packing policy")
	}
	tab, err := env.GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	alone, err := cfg.runAt(tab, 0, w)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Pack = true
	if _, ok := cfg.policy(w).(*env.PackedScoredPolicy); !ok {
		t.Fatalf("Pack gives %T", cfg.policy(w))
	}
	packed, err := cfg.runAt(tab, 0, w)
	if err != nil {
		t.Fatal(err)
	}
	if packed.atBound || !(alone.atBound || packed.avg < alone.avg) {
		t.Fatalf("packed %+v, unpacked %+v", packed, alone)
	}
}

// TestPackBaseline: --pack makes max_min_fairness_packed the baseline on
// single-GPU jobs, where the unpacked baselines stop at the bound; with
// gangs it stops first, and fifo_perf stays the baseline.
func TestPackBaseline(t *testing.T) {
	for _, c := range []struct {
		preset string
		pack   bool
		want   string
	}{
		{"gavel", false, "fifo_perf"},
		{"gavel", true, "fifo_perf"},
		{"gavel-single", false, DefaultRoundESConfigSingle().Baseline},
		{"gavel-single", true, "max_min_fairness_packed"},
	} {
		o := DefaultTrainOptions()
		o.Preset, o.Pack = c.preset, c.pack
		cfg, err := o.gavelESConfig()
		if err != nil || cfg.Baseline != c.want || cfg.Pack != c.pack {
			t.Errorf("--preset %s --pack=%v: baseline %q pack %v (%v), want %q", c.preset, c.pack, cfg.Baseline, cfg.Pack, err, c.want)
		}
	}
}

// TestInitCappedTiered: --init refuses a tiered file with a cap on the
// upper tier's remaining hours, which training would drop.
func TestInitCappedTiered(t *testing.T) {
	w, r := env.DefaultTieredParams(false)
	path := filepath.Join(t.TempDir(), "capped.json")
	if err := env.WriteTieredPolicy(path, &env.TieredPackedPolicy{Weights: w, LogRatio: r, MaxUpperHours: 4}, nil); err != nil {
		t.Fatal(err)
	}
	o := DefaultTrainOptions()
	o.Preset, o.Tiered, o.Init = "gavel-single", true, path
	if _, err := o.gavelESConfig(); err == nil || !strings.Contains(err.Error(), "max_upper_remaining_h") {
		t.Fatalf("capped --init: %v", err)
	}
}

// TestInitGangGuard: --init carries a tiered file's guards and
// tie-break weight into training, whose policies keep them; ES refuses
// each on a scored policy or out of range.
func TestInitGangGuard(t *testing.T) {
	w, r := env.DefaultTieredParams(false)
	path := filepath.Join(t.TempDir(), "guarded.json")
	if err := env.WriteTieredPolicy(path, &env.TieredPackedPolicy{Weights: w, LogRatio: r, GangGuardHours: 100, AgeGuardHours: 300, TieDeficit: 5}, nil); err != nil {
		t.Fatal(err)
	}
	o := DefaultTrainOptions()
	o.Preset, o.Tiered, o.Init = "gavel-single", true, path
	cfg, err := o.gavelESConfig()
	if err != nil || cfg.GangGuardHours != 100 || cfg.AgeGuardHours != 300 || cfg.TieDeficit != 5 {
		t.Fatalf("guarded --init: guards %v %v, tie weight %v (%v)", cfg.GangGuardHours, cfg.AgeGuardHours, cfg.TieDeficit, err)
	}
	if tp, ok := cfg.policy(cfg.Init).(*env.TieredPackedPolicy); !ok || tp.GangGuardHours != 100 || tp.AgeGuardHours != 300 || tp.TieDeficit != 5 {
		t.Fatalf("policy %+v", cfg.policy(cfg.Init))
	}
	for _, c := range []struct {
		tiered bool
		guard  float64
	}{{false, 100}, {true, -1}, {true, math.Inf(1)}} {
		bad := DefaultRoundESConfigSingle()
		bad.Tiered, bad.GangGuardHours = c.tiered, c.guard
		if _, err := TrainRoundES(context.Background(), bad, nil); err == nil || !strings.Contains(err.Error(), "gang guard") {
			t.Errorf("tiered %v guard %v: %v", c.tiered, c.guard, err)
		}
		bad = DefaultRoundESConfigSingle()
		bad.Tiered, bad.AgeGuardHours = c.tiered, c.guard
		if _, err := TrainRoundES(context.Background(), bad, nil); err == nil || !strings.Contains(err.Error(), "age guard") {
			t.Errorf("tiered %v age guard %v: %v", c.tiered, c.guard, err)
		}
		bad = DefaultRoundESConfigSingle()
		bad.Tiered, bad.TieDeficit = c.tiered, c.guard
		if _, err := TrainRoundES(context.Background(), bad, nil); err == nil || !strings.Contains(err.Error(), "tie-break") {
			t.Errorf("tiered %v tie weight %v: %v", c.tiered, c.guard, err)
		}
	}
}

// TestRoundESExchange: with Exchange the candidates are scored policies
// with the exchange pass, and on Gavel's multi-GPU protocol at 2.4 jobs/h
// the learned weights finish with a lower average JCT with it than
// without; the flags that do not go with --exchange are refused, naming
// it; training with it does not depend on the number of workers.
func TestRoundESExchange(t *testing.T) {
	cfg := DefaultRoundESConfig()
	w := []float64{9.85, -0.79, 1.41, -0.14, 1.62, 0.59, -0.57, 0.38, -0.87, 0.74}
	cfg.Exchange = true
	if p, ok := cfg.policy(w).(*env.ScoredPolicy); !ok || !p.Exchange {
		t.Fatalf("Exchange gives %T %+v", cfg.policy(w), cfg.policy(w))
	}
	cfg.Tiered = true
	if _, err := TrainRoundES(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), "Exchange and Tiered") {
		t.Fatalf("exchange and tiered: %v", err)
	}
	checkFlagRefusals(t, "--exchange", func(o *TrainOptions) { o.Exchange = true }, []flagRefusal{
		{"small", "", "", false, "--exchange: only the gavel presets"},
		{"gavel", "ppo", "", false, "--exchange, --consolidate, --upgrade, --tiered or"},
		{"gavel-single", "", "", true, "--tiered: the tiered policy packs and matches types"},
		{"gavel", "", t.TempDir(), false, "--exchange: offline learning"},
	})
	if testing.Short() {
		return
	}
	cfg = DefaultRoundESConfig()
	cfg.Rates, cfg.Seeds = []float64{2.4}, []uint64{100}
	tab, err := env.GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	greedy, err := cfg.runAt(tab, 0, w)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Exchange = true
	exchanged, err := cfg.runAt(tab, 0, w)
	if err != nil {
		t.Fatal(err)
	}
	if greedy.atBound || exchanged.atBound || !(exchanged.avg < greedy.avg) {
		t.Fatalf("exchanged %+v, greedy %+v", exchanged, greedy)
	}
	t.Logf("average JCT %.3f h exchanged, %.3f h greedy", exchanged.avg, greedy.avg)
	// Training with the pass is as deterministic as without it.
	tiny := tinyES()
	tiny.Exchange = true
	if rx := trainOnOneAndTwoWorkers(t, tiny); math.IsNaN(rx.Fitness) || rx.Fitness <= 0 {
		t.Fatalf("exchange training fitness %v", rx.Fitness)
	}
}

// TestRoundESConsolidate: with Consolidate the candidates are scored
// policies that consolidate gangs, and the flags that do not go with
// --consolidate are refused, naming it.
func TestRoundESConsolidate(t *testing.T) {
	cfg := DefaultRoundESConfig()
	cfg.Consolidate = true
	w := env.DefaultScoredWeights()
	if p, ok := cfg.policy(w).(*env.ScoredPolicy); !ok || !p.Consolidate {
		t.Fatalf("Consolidate gives %T %+v", cfg.policy(w), cfg.policy(w))
	}
	cfg.Tiered = true
	if _, err := TrainRoundES(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), "Consolidate and Tiered") {
		t.Fatalf("consolidate and tiered: %v", err)
	}
	checkFlagRefusals(t, "--consolidate", func(o *TrainOptions) { o.Consolidate = true }, []flagRefusal{
		{"small", "", "", false, "--consolidate: only the gavel presets"},
		{"gavel", "ppo", "", false, "--consolidate, --upgrade, --tiered or"},
		{"gavel-single", "", "", true, "--tiered: the tiered policy packs and matches types"},
		{"gavel", "", t.TempDir(), false, "--consolidate: offline learning"},
	})
}

// TestRoundESUpgrade: with Upgrade the candidates are scored policies
// with upgrades, packed or not, and the flags that do not go with
// --upgrade are refused, naming it.
func TestRoundESUpgrade(t *testing.T) {
	cfg := DefaultRoundESConfig()
	cfg.Upgrade = true
	w := env.DefaultScoredWeights()
	if p, ok := cfg.policy(w).(*env.ScoredPolicy); !ok || !p.Upgrade || p.Consolidate || p.Exchange {
		t.Fatalf("Upgrade gives %T %+v", cfg.policy(w), cfg.policy(w))
	}
	cfg.Pack = true
	if p, ok := cfg.policy(w).(*env.PackedScoredPolicy); !ok || !p.Upgrade {
		t.Fatalf("Upgrade and Pack give %T %+v", cfg.policy(w), cfg.policy(w))
	}
	cfg.Pack, cfg.Tiered = false, true
	if _, err := TrainRoundES(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), "Upgrade and Tiered") {
		t.Fatalf("upgrade and tiered: %v", err)
	}
	checkFlagRefusals(t, "--upgrade", func(o *TrainOptions) { o.Upgrade = true }, []flagRefusal{
		{"small", "", "", false, "--upgrade: only the gavel presets"},
		{"gavel", "ppo", "", false, "--upgrade, --tiered or"},
		{"gavel-single", "", "", true, "--tiered: the tiered policy packs and matches types"},
		{"gavel", "", t.TempDir(), false, "--upgrade: offline learning"},
	})
}

// flagRefusal is a tegrl train preset, method, offline folder and
// --tiered under which a flag must be refused with an error holding want.
type flagRefusal struct {
	preset, method, offline string
	tiered                  bool
	want                    string
}

// checkFlagRefusals runs tegrl train with the flag set by set under each
// refusal's settings and checks the error.
func checkFlagRefusals(t *testing.T, flag string, set func(*TrainOptions), cases []flagRefusal) {
	t.Helper()
	o := DefaultTrainOptions()
	o.Out = t.TempDir()
	set(&o)
	for _, c := range cases {
		o.Preset, o.GavelMethod, o.Offline, o.Tiered = c.preset, c.method, c.offline, c.tiered
		if err := o.Run(context.Background(), nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--preset %s --method %q --offline %q --tiered=%v %s: %v, want %q", c.preset, c.method, c.offline, c.tiered, flag, err, c.want)
		}
	}
}

// TestRoundESTiered: with Tiered the candidates are tiered policies whose
// last parameter is the log priority ratio; a clairvoyant run inserts the
// clairvoyant weight before it; the ratio saturates; the flags that do not
// go with --tiered are refused, naming it.
func TestRoundESTiered(t *testing.T) {
	cfg := DefaultRoundESConfigTiered()
	if !cfg.Tiered || cfg.Multi || cfg.Baseline != "max_min_fairness_packed" {
		t.Fatalf("config %+v", cfg)
	}
	w, r := env.DefaultTieredParams(false)
	theta := append(slices.Clone(w), r, -0.5)
	p, ok := cfg.policy(theta).(*env.TieredPackedPolicy)
	if !ok || !slices.Equal(p.Weights, w) || p.LogRatio != r || p.LoadSlope != -0.5 || p.Clairvoyant {
		t.Fatalf("policy %T %+v", cfg.policy(theta), cfg.policy(theta))
	}
	theta[len(theta)-2], theta[len(theta)-1] = 50, -50
	if p := cfg.policy(theta).(*env.TieredPackedPolicy); p.LogRatio != tieredLogRatioLimit || p.LoadSlope != -tieredLogRatioLimit {
		t.Fatalf("ratio 50, slope -50 give %v, %v", p.LogRatio, p.LoadSlope)
	}
	// Zero iterations are refused after the initial weights are checked:
	// the error tells which check the init passed.
	cfg.Iterations = 0
	cfg.Clairvoyant = true
	cfg.Init = append(slices.Clone(w), r, 0)
	if _, err := TrainRoundES(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), "need iterations") {
		t.Fatalf("clairvoyant from a non-clairvoyant init: %v", err)
	}
	cfg.Init = []float64{1, 2}
	if _, err := TrainRoundES(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), "2 initial weights, want 10") {
		t.Fatalf("short init: %v", err)
	}
	cfg.Pack = true
	if _, err := TrainRoundES(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), "Pack and Tiered") {
		t.Fatalf("pack and tiered: %v", err)
	}
	o := DefaultTrainOptions()
	o.Out = t.TempDir()
	for _, c := range []struct {
		preset, method, scenarios string
		pack                      bool
		want                      string
	}{
		{"small", "", "", false, "--tiered: only the gavel presets"},
		{"gavel", "", "", false, "--tiered: trains on the continuous-single protocol only"},
		{"gavel-single", "ppo", "", false, "--pack, --exchange, --consolidate, --upgrade, --tiered or"},
		{"gavel-single", "", "", true, "--tiered: the tiered policy packs"},
		{"gavel-single", "", "openb/16-multi@1", false, "--tiered: the tiered policy packs"},
	} {
		o.Preset, o.GavelMethod, o.GavelScenarios, o.Pack, o.Tiered = c.preset, c.method, c.scenarios, c.pack, true
		if err := o.Run(context.Background(), nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--preset %s --method %q --train-scenarios %q --pack=%v --tiered: %v, want %q", c.preset, c.method, c.scenarios, c.pack, err, c.want)
		}
	}
	o.Preset, o.GavelMethod, o.GavelScenarios, o.Pack, o.Init = "gavel-single", "", "", false, "../docs/policies/gavel-single.json"
	if err := o.Run(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "want a tiered policy file") {
		t.Errorf("--tiered --init with a scored file: %v", err)
	}
}

// TestTailWeightFlag: --tail-weight is refused where no protocol run's
// p99 is scored (other presets, PPO, offline) and out of [0, 100], before
// anything is written.
func TestTailWeightFlag(t *testing.T) {
	if DefaultRoundESConfig().TailWeight != 0 || DefaultRoundESConfigTiered().TailWeight != 0 {
		t.Fatal("preset tail weights changed")
	}
	for _, c := range []struct {
		preset, method, offline string
		tail                    float64
		want                    string
	}{
		{"small", "", "", 1, "--tail-weight: only the gavel presets"},
		{"gavel-single", "ppo", "", 1, "--tail-weight)"},
		{"gavel-single", "", "runs/x", 1, "--tail-weight: offline learning"},
		{"gavel-single", "", "", -1, "--tail-weight -1: want a weight in [0, 100]"},
		{"gavel", "", "", math.NaN(), "want a weight in [0, 100]"},
	} {
		o := DefaultTrainOptions()
		o.Out = filepath.Join(t.TempDir(), "out")
		o.Preset, o.GavelMethod, o.Offline, o.TailWeight = c.preset, c.method, c.offline, c.tail
		o.Set = func(name string) bool { return name == "tail-weight" }
		if err := o.Run(context.Background(), nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--preset %s --method %q --offline %q --tail-weight %v: %v, want %q", c.preset, c.method, c.offline, c.tail, err, c.want)
		}
		if _, err := os.Stat(o.Out); !os.IsNotExist(err) {
			t.Errorf("--preset %s: output folder written (%v)", c.preset, err)
		}
	}
}

// TestTrainRoundESTieredDeterministic: tiered ES gives the same
// parameters whatever the number of workers, and its result is a valid
// tiered policy file that loads back as the same policy.
func TestTrainRoundESTieredDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 10 protocol runs")
	}
	cfg := DefaultRoundESConfigTiered()
	cfg.Rates, cfg.Seeds, cfg.Iterations, cfg.Pairs = []float64{4.0}, []uint64{100}, 1, 1
	ra := trainOnOneAndTwoWorkers(t, cfg)
	if len(ra.Weights) != len(env.TieredFeatures)+2 {
		t.Fatalf("%d parameters, want %d", len(ra.Weights), len(env.TieredFeatures)+2)
	}
	want := RoundESConfig{}.tieredPolicy(ra.Weights)
	path := t.TempDir() + "/policy.json"
	if err := env.WriteTieredPolicy(path, want, nil); err != nil {
		t.Fatal(err)
	}
	p, err := env.AllocationPolicyByName(path)
	if tp, ok := p.(*env.TieredPackedPolicy); err != nil || !ok || !slices.Equal(tp.Weights, want.Weights) || tp.LogRatio != want.LogRatio || tp.LoadSlope != want.LoadSlope {
		t.Fatalf("read back %T %v", p, err)
	}
}
