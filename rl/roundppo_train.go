package rl

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
	"github.com/tegrl/tegrl/rl/transport"
)

// GavelPPOSummary is summary.json of a gavel preset trained with
// --method ppo.
type GavelPPOSummary struct {
	Preset    string         `json:"preset"`
	Method    string         `json:"method"` // "ppo"
	Config    RoundPPOConfig `json:"config"`
	Fitness   float64        `json:"train_fitness"` // greedy weights' mean JCT relative to the baseline on the training runs
	Weights   []float64      `json:"weights"`
	Features  []string       `json:"features"`
	EvalSeeds []uint64       `json:"eval_seeds"`
	Eval      []GavelEvalRow `json:"eval"`
	// Transport is the learner's transport counters (with actors).
	Transport *transport.LearnerStats `json:"transport,omitempty"`
	Command   string                  `json:"command"`
}

// runGavelPPO is tegrl train --preset gavel (gavel-single) --method ppo:
// TrainRoundPPO on the preset's runs, then the held-out comparison with
// GavelBaselines that the ES preset gives.
func (o TrainOptions) runGavelPPO(ctx context.Context, w io.Writer) error {
	evalSpec := o.gavelEvalSpec()
	seeds, err := report.ParseSeeds(evalSpec)
	if err != nil {
		return fmt.Errorf("--eval-seeds: %w", err)
	}
	cfg := DefaultRoundPPOConfig()
	if o.Preset == "gavel-single" {
		cfg = DefaultRoundPPOConfigSingle()
	}
	cfg.Seed, cfg.Actors, cfg.Transport, cfg.Logger = o.Seed, runtime.GOMAXPROCS(0), o.Transport, o.Logger
	if o.given("actors") {
		cfg.Actors = o.Actors
	}
	if cfg.Actors < 0 {
		return fmt.Errorf("--actors %d: want 0 (sample in this process) or more", cfg.Actors)
	}
	if cfg.Transport != "nats" && cfg.Transport != "chan" {
		return fmt.Errorf("--transport %q: want nats or chan", cfg.Transport)
	}
	if o.GavelRates != "" {
		if cfg.Rates, err = report.ParseRates(o.GavelRates); err != nil {
			return fmt.Errorf("--rates: %w", err)
		}
	}
	if o.Init != "" {
		p, err := env.AllocationPolicyByName(o.Init)
		sp, ok := p.(*env.ScoredPolicy)
		if err != nil || !ok || sp.Clairvoyant {
			return fmt.Errorf("--init %s: want a non-clairvoyant scored policy file (tegrl train --preset gavel output) (%v)", o.Init, err)
		}
		cfg.Init = sp.Weights
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	if cfg.Actors > 0 {
		var pub string
		if cfg.SigningKey, pub, err = transport.RunSigningKey(o.Out, o.Seed, o.KeyFromSeed, false); err != nil {
			return err
		}
		o.Logger.Info("weights signed", "public_key", pub, "actors", cfg.Actors, "transport", cfg.Transport)
	}
	logf, err := os.Create(filepath.Join(o.Out, "train_log.csv"))
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintln(logf, "iteration,fitness,rollout_rel_jct,saturated,samples,choices,entropy,approx_kl,clip_frac")
	res, err := TrainRoundPPO(ctx, cfg, func(r RoundPPOIteration) {
		fmt.Fprintf(logf, "%d,%.6f,%.6f,%d,%d,%d,%.6f,%.6f,%.6f\n", r.Iteration, r.Fitness, r.RolloutJCT, r.Saturated, r.Samples, r.Choices, r.Entropy, r.ApproxKL, r.ClipFrac)
		o.Logger.Info("ppo", "iteration", r.Iteration, "of", cfg.Iterations, "fitness", r.Fitness, "rollout_rel_jct", r.RolloutJCT,
			"saturated", r.Saturated, "entropy", r.Entropy, "approx_kl", r.ApproxKL, "clip_frac", r.ClipFrac)
	})
	if err != nil {
		return err
	}
	pol := filepath.Join(o.Out, "policy.json")
	if err := env.WriteScoredPolicy(pol, res.Weights, map[string]any{"method": "ppo", "multi": cfg.Multi,
		"rates": cfg.Rates, "seeds": cfg.Seeds, "baseline": cfg.Baseline, "fitness": res.Fitness}); err != nil {
		return err
	}
	sum := GavelPPOSummary{Preset: o.Preset, Method: "ppo", Config: cfg, Fitness: res.Fitness, Weights: res.Weights,
		Features: env.ScoredFeatures, EvalSeeds: seeds, Transport: res.Transport, Command: o.Command}
	if len(seeds) > 0 {
		if sum.Eval, err = EvalGavel(ctx, cfg.es(), res.Weights, seeds); err != nil {
			return err
		}
	}
	return o.finishGavel(w, sum, fmt.Sprintf("%s\ntraining fitness (average JCT / %s's, rates %v, seeds %v): %.4f\n", pol, cfg.Baseline, cfg.Rates, cfg.Seeds, res.Fitness), seeds, sum.Eval)
}
