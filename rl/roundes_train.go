package rl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
)

// GavelBaselines are the non-clairvoyant policies the gavel preset's
// learned policy is evaluated against.
var GavelBaselines = []string{"fifo_perf", "max_min_fairness", "max_min_fairness_perf", "max_min_fairness_packed", "gandiva", "tiresias", "langevin"}

// GavelEvalSeeds are the gavel preset's held-out seeds (training uses
// DefaultRoundESConfig's 100-102).
const GavelEvalSeeds = "0-4"

// GavelEvalRow is one rate of the gavel preset's held-out evaluation.
type GavelEvalRow struct {
	Rate float64 `json:"rate_jobs_per_h"`
	// AvgJCT is each policy's mean over the seeds of the average JCT
	// (hours); NaN (null in JSON) when a seed stopped at the bound.
	AvgJCT map[string]*float64 `json:"avg_jct_h"`
	Floor  float64             `json:"floor_jct_h"`
	// Best is the baseline with the lowest AvgJCT; DiffMean and the CI are
	// the learned policy's average JCT minus Best's, paired by seed, with a
	// 95% percentile bootstrap interval.
	Best     string  `json:"best_baseline"`
	DiffMean float64 `json:"diff_h"`
	CILow    float64 `json:"ci_low_h"`
	CIHigh   float64 `json:"ci_high_h"`
}

// GavelTrainSummary is summary.json of the gavel preset.
type GavelTrainSummary struct {
	Preset    string         `json:"preset"`
	Config    RoundESConfig  `json:"config"`
	Fitness   float64        `json:"train_fitness"` // mean JCT relative to the baseline on the training runs
	Weights   []float64      `json:"weights"`
	Features  []string       `json:"features"`
	EvalSeeds []uint64       `json:"eval_seeds"`
	Eval      []GavelEvalRow `json:"eval"`
	Command   string         `json:"command"`
}

// runGavel is tegrl train --preset gavel (gavel-single): evolution
// strategies on the weights of env.ScoredPolicy over Gavel's
// continuous-multiple (continuous-single) protocol (TrainRoundES), then
// the held-out comparison with GavelBaselines.
func (o TrainOptions) runGavel(ctx context.Context, w io.Writer) error {
	// The PPO preset's flags mean nothing here: given, they are an error
	// rather than silently ignored.
	for _, name := range []string{"steps", "batch", "actors", "nats", "lr", "gamma", "encoder", "offline-ref", "offline-epochs", "awr-lambda", "awr-beta", "resume", "machines", "load", "episode", "candidates", "hidden", "reward", "reward-baseline", "replicas", "shaping", "ent-coef", "segment", "sync", "transport"} {
		if o.GavelMethod == "ppo" && (name == "actors" || name == "transport") {
			continue
		}
		if o.given(name) {
			return fmt.Errorf("--%s: --preset %s trains in this process (--method es or ppo, or offline: --offline, --offline-method) and takes only --out, --seed, --init, --rates, --method, --clairvoyant, --pack, --exchange, --consolidate, --upgrade, --tiered, --tail-weight, --train-scenarios, --eval-seeds and --json (with --method ppo also --actors and --transport)", name, o.Preset)
		}
	}
	switch o.GavelMethod {
	case "", "es":
	case "ppo":
		if o.Offline != "" || o.Clairvoyant || o.GavelScenarios != "" || o.Pack || o.Exchange || o.Consolidate || o.Upgrade || o.Tiered || o.given("tail-weight") {
			return fmt.Errorf("--method ppo: trains the non-clairvoyant, unpacked policy online on the protocol's runs by its average JCT (no --offline, --clairvoyant, --train-scenarios, --pack, --exchange, --consolidate, --upgrade, --tiered or --tail-weight)")
		}
		return o.runGavelPPO(ctx, w)
	default:
		return fmt.Errorf("--method %q: want es or ppo", o.GavelMethod)
	}
	if o.Tiered && o.Preset != "gavel-single" {
		return fmt.Errorf("--tiered: trains on the continuous-single protocol only (--preset gavel-single)")
	}
	if o.Tiered && (o.Pack || o.Exchange || o.Consolidate || o.Upgrade || o.Offline != "" || o.GavelScenarios != "") {
		return fmt.Errorf("--tiered: the tiered policy packs and matches types through Gavel's LP and trains online on the protocol's runs (no --pack, --exchange, --consolidate, --upgrade, --offline or --train-scenarios)")
	}
	if o.Offline != "" && o.given("tail-weight") {
		return fmt.Errorf("--tail-weight: offline learning fits logged decisions; it runs no protocol to measure a tail on")
	}
	if o.Offline != "" {
		if o.Pack {
			return fmt.Errorf("--pack: offline learning fits the unpacked policy (no --pack with --offline)")
		}
		if o.Exchange {
			return fmt.Errorf("--exchange: offline learning fits the scored policy without the exchange pass (no --exchange with --offline)")
		}
		if o.Consolidate {
			return fmt.Errorf("--consolidate: offline learning fits the scored policy's weights only (no --consolidate with --offline)")
		}
		if o.Upgrade {
			return fmt.Errorf("--upgrade: offline learning fits the scored policy's weights only (no --upgrade with --offline)")
		}
		return o.runGavelOffline(ctx, w)
	}
	var seeds []uint64
	var err error
	if evalSpec := o.gavelEvalSpec(); evalSpec != "" {
		if seeds, err = report.ParseSeeds(evalSpec); err != nil {
			return fmt.Errorf("--eval-seeds: %w", err)
		}
	}
	cfg, err := o.gavelESConfig()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(o.Out, "train_log.csv"))
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintln(logf, "iteration,fitness,best_pop,mean_pop,saturated")
	res, err := TrainRoundES(ctx, cfg, func(r RoundESIteration) {
		fmt.Fprintf(logf, "%d,%.6f,%.6f,%.6f,%d\n", r.Iteration, r.Fitness, r.BestPop, r.MeanPop, r.Saturated)
		o.Logger.Info("es", "iteration", r.Iteration, "of", cfg.Iterations, "fitness", r.Fitness, "best_pop", r.BestPop, "saturated", r.Saturated)
	})
	if err != nil {
		return err
	}
	pol := filepath.Join(o.Out, "policy.json")
	training := map[string]any{"method": "evolution strategies", "multi": cfg.Multi, "tail_weight": cfg.TailWeight,
		"clairvoyant": cfg.Clairvoyant, "pack": cfg.Pack, "exchange": cfg.Exchange, "consolidate": cfg.Consolidate, "upgrade": cfg.Upgrade, "rates": cfg.Rates, "seeds": cfg.Seeds, "baseline": cfg.Baseline, "fitness": res.Fitness}
	features := env.ScoredFeatureNames(cfg.Clairvoyant)
	switch {
	case cfg.Tiered:
		training["tiered"] = true
		features = append(slices.Clone(env.TieredFeatureNames(cfg.Clairvoyant)), "log_priority_ratio", "log_ratio_load_slope")
		tp := cfg.tieredPolicy(res.Weights)
		res.Weights = append(slices.Clone(tp.Weights), tp.LogRatio, tp.LoadSlope)
		err = env.WriteTieredPolicy(pol, tp, training)
	default:
		err = env.WriteScoredPolicyFile(pol, env.ScoredPolicy{Weights: res.Weights, Pack: cfg.Pack, Exchange: cfg.Exchange, Consolidate: cfg.Consolidate, Upgrade: cfg.Upgrade}, training)
	}
	if err != nil {
		return err
	}
	sum := GavelTrainSummary{Preset: o.Preset, Config: cfg, Fitness: res.Fitness, Weights: res.Weights, Features: features,
		EvalSeeds: seeds, Command: o.Command}
	if len(seeds) > 0 {
		if sum.Eval, err = EvalGavel(ctx, cfg, res.Weights, seeds); err != nil {
			return err
		}
	}
	return o.finishGavel(w, sum, fmt.Sprintf("%s\ntraining fitness (average JCT / %s's, rates %v, seeds %v): %.4f\n", pol, cfg.Baseline, cfg.Rates, cfg.Seeds, res.Fitness), seeds, sum.Eval)
}

// finishGavel writes a gavel preset's summary to DIR/summary.json and
// prints it (--json), or the header and the held-out evaluation.
func (o TrainOptions) finishGavel(w io.Writer, sum any, header string, seeds []uint64, eval []GavelEvalRow) error {
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.Out, "summary.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if o.JSON {
		_, err = w.Write(append(b, '\n'))
		return err
	}
	fmt.Fprint(w, header)
	return WriteGavelEval(w, seeds, eval)
}

// EvalGavel runs the learned weights and GavelBaselines on the training
// rates at the held-out seeds and pairs the learned policy with the best
// baseline at each rate.
func EvalGavel(ctx context.Context, cfg RoundESConfig, weights []float64, seeds []uint64) ([]GavelEvalRow, error) {
	tab, err := env.GavelThroughputTable()
	if err != nil {
		return nil, err
	}
	pols := append([]string{"learned"}, GavelBaselines...)
	np, nr, ns := len(pols), len(cfg.Rates), len(seeds)
	jct := make([]float64, np*nr*ns)
	floor := make([]float64, nr*ns)
	ev := cfg
	ev.Seeds = seeds
	err = report.ForEach(ctx, len(jct), cfg.Workers, func(i int) error {
		p, k := i/(nr*ns), i%(nr*ns)
		var w []float64
		if p == 0 {
			w = weights
		}
		run := ev.run(k, w)
		if p > 0 {
			run.Policy = pols[p]
		}
		run.Round.MaxActive = 0 // the protocol's bound, as tegrl gavel
		r, err := run.Run(tab)
		if err != nil {
			return err
		}
		jct[i] = r.AvgJCTHours
		if r.Saturated {
			jct[i] = math.NaN()
		}
		if p == 0 {
			floor[k] = r.FloorHours
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var rows []GavelEvalRow
	for r, rate := range cfg.Rates {
		row := GavelEvalRow{Rate: rate, AvgJCT: map[string]*float64{}, Floor: mean(floor[r*ns : (r+1)*ns])}
		at := func(p int) []float64 { return jct[p*nr*ns+r*ns : p*nr*ns+(r+1)*ns] }
		bestJ := math.Inf(1)
		for p, name := range pols {
			m := mean(at(p))
			if !math.IsNaN(m) {
				row.AvgJCT[name] = &m
				if p > 0 && m < bestJ {
					bestJ, row.Best = m, name
				}
			} else {
				row.AvgJCT[name] = nil
			}
		}
		if row.Best != "" && row.AvgJCT["learned"] != nil {
			d := make([]float64, ns)
			for s := range d {
				d[s] = at(0)[s] - at(slices.Index(pols, row.Best))[s]
			}
			row.DiffMean = mean(d)
			if row.CILow, row.CIHigh, err = report.BootstrapMeanCI(d, report.DefaultResamples, report.DefaultLevel, 1); err != nil {
				return nil, err
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// WriteGavelEval writes the held-out comparison as a table.
func WriteGavelEval(w io.Writer, seeds []uint64, rows []GavelEvalRow) error {
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintf(w, "held-out seeds %s, average JCT (h):\n", report.FormatSeeds(seeds))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	names := append([]string{"learned"}, GavelBaselines...)
	fmt.Fprintf(tw, "rate\tfloor\t%s\tlearned - best (95%% CI)\t\n", strings.Join(names, "\t"))
	for _, r := range rows {
		fmt.Fprintf(tw, "%.1f\t%.2f", r.Rate, r.Floor)
		for _, n := range names {
			if v := r.AvgJCT[n]; v != nil {
				fmt.Fprintf(tw, "\t%.2f", *v)
			} else {
				fmt.Fprint(tw, "\tbound")
			}
		}
		fmt.Fprintf(tw, "\t%+.2f [%+.2f, %+.2f] vs %s\t\n", r.DiffMean, r.CILow, r.CIHigh, r.Best)
	}
	return tw.Flush()
}

// gavelEvalSpec is the gavel presets' held-out seeds: --eval-seeds when
// given, else GavelEvalSeeds.
func (o TrainOptions) gavelEvalSpec() string {
	if o.given("eval-seeds") {
		return o.EvalSeeds
	}
	return GavelEvalSeeds
}

// gavelESConfig is the evolution-strategies configuration --preset gavel
// and gavel-single train with: the preset's defaults with the flags over
// them, the baseline the fitness is relative to, and --init's weights.
func (o TrainOptions) gavelESConfig() (RoundESConfig, error) {
	var err error
	cfg := DefaultRoundESConfig()
	if o.Preset == "gavel-single" {
		cfg = DefaultRoundESConfigSingle()
	}
	if o.Tiered {
		cfg = DefaultRoundESConfigTiered()
	}
	cfg.Seed, cfg.Clairvoyant, cfg.Pack, cfg.Exchange, cfg.Consolidate, cfg.Upgrade = o.Seed, o.Clairvoyant, o.Pack, o.Exchange, o.Consolidate, o.Upgrade
	if cfg.Pack && o.Preset == "gavel-single" {
		// On single-GPU jobs the unpacked baselines stop at the bound
		// where packing matters. With gangs it is max_min_fairness_packed
		// that stops first (Gavel's multi-GPU protocol from 2.2 jobs/h),
		// and fifo_perf stays the baseline.
		cfg.Baseline = "max_min_fairness_packed"
	}
	if o.given("tail-weight") {
		if !(o.TailWeight >= 0 && o.TailWeight <= 100) {
			return cfg, fmt.Errorf("--tail-weight %v: want a weight in [0, 100]", o.TailWeight)
		}
		cfg.TailWeight = o.TailWeight
	}
	if o.GavelRates != "" {
		if cfg.Rates, err = report.ParseRates(o.GavelRates); err != nil {
			return cfg, fmt.Errorf("--rates: %w", err)
		}
	}
	if o.GavelScenarios != "" {
		if cfg.Scenarios, err = ParseRoundESScenarios(o.GavelScenarios, cfg.Seeds); err != nil {
			return cfg, fmt.Errorf("--train-scenarios: %w", err)
		}
	}
	if o.Init != "" && cfg.Tiered {
		p, err := env.AllocationPolicyByName(o.Init)
		tp, ok := p.(*env.TieredPackedPolicy)
		if err != nil {
			return cfg, fmt.Errorf("--init: %w", err)
		}
		if !ok || (tp.Clairvoyant && !cfg.Clairvoyant) {
			return cfg, fmt.Errorf("--init %s: want a tiered policy file (tegrl train --tiered output), clairvoyant only with --clairvoyant", o.Init)
		}
		if tp.MaxUpperHours > 0 {
			return cfg, fmt.Errorf("--init %s: training does not keep max_upper_remaining_h; start from a file without it", o.Init)
		}
		cfg.Init = append(slices.Clone(tp.Weights), tp.LogRatio, tp.LoadSlope)
		cfg.GangGuardHours, cfg.AgeGuardHours, cfg.TieDeficit = tp.GangGuardHours, tp.AgeGuardHours, tp.TieDeficit
	} else if o.Init != "" {
		p, err := env.AllocationPolicyByName(o.Init)
		sp, ok := p.(*env.ScoredPolicy)
		if pp, packed := p.(*env.PackedScoredPolicy); packed {
			sp, ok = &pp.ScoredPolicy, true
		}
		if err != nil || !ok || (sp.Clairvoyant && !cfg.Clairvoyant) {
			return cfg, fmt.Errorf("--init %s: want a scored policy file (tegrl train --preset gavel output), clairvoyant only with --clairvoyant (%v)", o.Init, err)
		}
		cfg.Init = sp.Weights
	}
	return cfg, nil
}
