package rl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
	"github.com/tegrl/tegrl/rl/transport"
)

// TrainOptions is tegrl train as its command line gives it: a preset, the
// settings that override it, the offline mode, the evaluation and the
// output. Run turns it into a TrainRun or an OfflineRun and prints the
// summary; its errors name the command's flags.
type TrainOptions struct {
	Preset string `flag:"preset" default:"small" usage:"training preset: small, saturate, gavel (Gavel's continuous-multiple protocol) or gavel-single (continuous-single)"`
	Out    string `flag:"out" usage:"output directory (required)"`
	Seed   uint64 `flag:"seed" default:"1" usage:"seed of the network initialisation, the actors' episodes and the minibatches"`
	// Actors, SegmentLen, Sync, MaxLag, Transport, NATSURL, Token and RunID
	// are TrainConfig's.
	SegmentLen  int     `flag:"segment" usage:"steps per trajectory segment"`
	Actors      int     `flag:"actors" default:"1" usage:"in-process actors (0: only remote tegrl actor processes); on 2 cores one actor keeps the learner busy"`
	Sync        bool    `flag:"sync" default:"true" usage:"in-process actors wait for every update (on-policy lockstep; with --actors 1 the run is deterministic); --sync=false for IMPALA's asynchronous actors"`
	MaxLag      uint64  `flag:"max-lag" usage:"drop segments more than this many policy versions old"`
	Token       string  `flag:"token" usage:"NATS token (also for the embedded server)"`
	NATSURL     string  `flag:"nats" usage:"NATS server URL (default: an embedded server on a random loopback port)"`
	Transport   string  `flag:"transport" default:"nats" usage:"nats, or chan (in-process channels, for comparison)"`
	RunID       string  `flag:"run" default:"train" usage:"run id: scopes the NATS subjects (letters, digits, - and _)"`
	Credentials string  `flag:"credentials" usage:"file of the learner's NATS user credentials (NAME:PASSWORD) for --nats (default: the file $TEGRL_NATS_CREDENTIALS names)"`
	KeyFromSeed bool    `flag:"sign-key-from-seed" usage:"derive the signing key from --seed instead of crypto/rand (reproducible signatures; anyone who knows the seed can sign)"`
	Batch       int     `flag:"batch" usage:"decisions per PPO update (default: the preset's)"`
	Steps       int     `flag:"steps" usage:"decisions to learn from (default: the preset's)"`
	Candidates  int     `flag:"candidates" usage:"candidate machines per decision (default: the preset's)"`
	Machines    int     `flag:"machines" usage:"machines of the synthetic cluster (default: the preset's)"`
	Hidden      int     `flag:"hidden" usage:"hidden width (default: the preset's)"`
	Episode     float64 `flag:"episode" usage:"simulated seconds per episode (default: the preset's)"`
	Load        float64 `flag:"load" usage:"offered load (default: the preset's)"`
	EntCoef     float64 `flag:"ent-coef" usage:"weight of the placement entropy bonus"`
	Shaping     float64 `flag:"shaping" usage:"potential-based reward shaping from the reward baseline's load: horizon in simulated seconds (0: off; docs/rl.md)"`
	Gamma       float64 `flag:"gamma" usage:"discount per decision (default: the preset's)"`
	LR          float64 `flag:"lr" usage:"Adam learning rate (default: the preset's)"`
	Baseline    string  `flag:"reward-baseline" usage:"scheduler run alongside whose accrual each reward is relative to (\"\": none; default: the preset's)"`
	Reward      string  `flag:"reward" usage:"reward: slowdown or teg (default: the preset's)"`
	Encoder     string  `flag:"encoder" usage:"candidate encoder: mlp, or gnn (temporal and graph layers on the decision's candidate graph; docs/rl.md) (default: the preset's)"`
	Replicas    bool    `flag:"replicas" usage:"let the policy change services' replica counts (off: deltas are 0; see docs/rl.md)"`
	// Nodes and Pods are the trace tables of the saturate preset.
	Nodes string `flag:"nodes" default:"alibaba-gpu" usage:"--preset saturate: Alibaba GPU trace node table: alibaba-gpu (bundled nodes.csv) or alibaba-gpu:FILE"`
	Pods  string `flag:"pods" default:"alibaba-gpu" usage:"--preset saturate: Alibaba GPU trace pod table: alibaba-gpu (bundled pods.csv) or alibaba-gpu:FILE"`
	// EvalSeeds ("": no evaluation) and EvalRefs are lists of held-out
	// seeds and built-in schedulers.
	EvalSeeds       string
	EvalRefs        string `flag:"eval-ref" default:"langevin,kube,bestfit,fgd" usage:"schedulers the policy is compared with"`
	CheckpointEvery int    `flag:"checkpoint-every" usage:"write DIR/checkpoint every this many updates and at the end (0: never)"`
	Init            string `flag:"init" usage:"start from this policy (a policy file or train output folder of the same shape), e.g. an offline one; the gavel presets: a scored policy .json"`
	// GavelRates, when set, replaces the gavel presets' training arrival
	// rates (report.ParseRates: "4.8,5.2" or "3.6-5.6:0.4").
	GavelRates string `flag:"rates" usage:"--preset gavel or gavel-single: training arrival rates in jobs/h, a list or a range (default: the preset's)"`
	// GavelScenarios adds training runs on other GPU clusters
	// (ParseRoundESScenarios: "openb/16-multi@1.2:100").
	GavelScenarios string `flag:"train-scenarios" usage:"--preset gavel or gavel-single: more training runs on other GPU clusters, CLUSTER-WORKLOAD@LOAD[:SEED] comma-separated (no seed: one run per training seed)"`
	// GavelMethod is how the gavel presets learn: "es" (TrainRoundES, the
	// default) or "ppo" (TrainRoundPPO).
	GavelMethod string `flag:"method" usage:"--preset gavel or gavel-single: es (evolution strategies on the scored policy's weights) or ppo (the same score as a masked softmax over (job, GPU type) candidates and stop, trained by PPO)"`
	// Pack is the gavel presets' packed scored policy.
	Pack bool `flag:"pack" usage:"--preset gavel or gavel-single (--method es): train the packed scored policy, whose waiting jobs space-share GPUs with running ones as Gavel's packed policies do"`
	// Exchange is the gavel presets' scored policy with its exchange pass
	// (env.ScoredPolicy.Exchange).
	Exchange bool `flag:"exchange" usage:"--preset gavel or gavel-single (--method es): train the scored policy with its exchange pass, which swaps gangs between GPU types and moves them onto free GPUs while that lowers their summed slowdown"`
	// Upgrade is the gavel presets' scored policy with
	// env.ScoredPolicy.Upgrade.
	Upgrade bool `flag:"upgrade" usage:"--preset gavel or gavel-single (--method es): train the scored policy with upgrades: between two allocations an allocated job may also run on idle GPUs of a type faster for it"`
	// Consolidate is the gavel presets' scored policy with
	// env.ScoredPolicy.Consolidate.
	Consolidate bool `flag:"consolidate" usage:"--preset gavel or gavel-single (--method es): write a scored policy that runs placement-sensitive gangs on one server only (Tiresias's rule), where the simulator models servers (the node-list clusters of --train-scenarios and of later runs; not Gavel's protocol)"`
	// Tiered is the gavel presets' tiered policy (env.TieredPackedPolicy).
	Tiered bool `flag:"tiered" usage:"--preset gavel-single (--method es): train the tiered policy, a learned split of the jobs into two priority tiers inside Gavel's max_min_fairness_packed LP"`
	// TailWeight, when set, replaces the gavel presets' RoundESConfig.TailWeight (0).
	TailWeight float64 `flag:"tail-weight" usage:"--preset gavel or gavel-single (--method es): add this weight x max(0, p99 JCT / the baseline's - 1) to each training run's relative average JCT (0: the mean alone)"`
	// Clairvoyant is the gavel presets' clairvoyant scored policy.
	Clairvoyant bool   `flag:"clairvoyant" usage:"--preset gavel or gavel-single: train the clairvoyant scored policy, which also reads each job's remaining run time (a bound to measure the others against, not deployable)"`
	Resume      string `flag:"resume" usage:"continue the run whose checkpoint directory this is (same flags; with --actors 1 --sync the numbers are those of an uninterrupted run)"`
	// Offline, when set, lists recording folders to learn from offline
	// with OfflineConfig; OfflineRef is the scheduler the rewards are
	// relative to.
	OfflineRef    string `flag:"offline-ref" usage:"built-in scheduler run beside each recording: rewards become relative to its accrual (\"\": raw rewards)"`
	Offline       string `flag:"offline" usage:"learn offline from recordings of tegrl dataset record (comma-separated folders) instead of online"`
	OfflineConfig OfflineConfig
	JSON          bool `flag:"json" usage:"print the summary as JSON"`
	// Set tells whether a flag was given: the settings above that have a
	// preset default override it only then.
	Set     func(flag string) bool
	Command string
	Logger  *slog.Logger
	Bar     io.Writer // progress bar, drawn when it is a terminal
}

// given tells whether flag was given on the command line (false when
// Set is nil, as for options built in code).
func (o TrainOptions) given(flag string) bool { return o.Set != nil && o.Set(flag) }

// DefaultTrainOptions is tegrl train's defaults: the small preset, one
// synchronous in-process actor, the default segment, lag, entropy and
// checkpoint settings and the offline defaults.
func DefaultTrainOptions() TrainOptions {
	return TrainOptions{SegmentLen: DefaultSegmentLen, MaxLag: DefaultMaxLag, EntCoef: DefaultEntCoef,
		CheckpointEvery: DefaultCheckpointEvery, EvalSeeds: EvalSeeds, OfflineConfig: DefaultOfflineConfig()}
}

// config is the run's configuration: the preset with the settings given
// applied. The saturate preset's evaluation seeds replace EvalSeeds unless
// it was given.
func (o *TrainOptions) config() (TrainConfig, error) {
	cfg, err := Preset(o.Preset)
	if err != nil {
		return cfg, err
	}
	for _, s := range []struct {
		flag string
		set  func()
	}{
		{"steps", func() { cfg.TotalSteps = o.Steps }}, {"batch", func() { cfg.BatchSize = o.Batch }},
		{"machines", func() { cfg.Env.Machines = o.Machines }}, {"load", func() { cfg.Env.Load = o.Load }},
		{"episode", func() { cfg.Env.Episode = o.Episode }}, {"lr", func() { cfg.PPO.LR = o.LR }},
		{"gamma", func() { cfg.PPO.Gamma = o.Gamma }}, {"ent-coef", func() { cfg.PPO.EntCoef = o.EntCoef }},
		{"candidates", func() { cfg.Policy.Candidates = o.Candidates }}, {"hidden", func() { cfg.Policy.Hidden = o.Hidden }},
		{"reward", func() { cfg.Env.Reward = o.Reward }}, {"reward-baseline", func() { cfg.Env.Baseline = o.Baseline }},
		{"encoder", func() { cfg.Policy.Encoder = map[bool]string{true: "", false: o.Encoder}[o.Encoder == "mlp"] }},
	} {
		if o.Set(s.flag) {
			s.set()
		}
	}
	if o.Shaping > 0 {
		cfg.Env.Shaping, cfg.Env.ShapingGamma = o.Shaping, cfg.PPO.Gamma
	}
	cfg.Policy.Replicas = o.Replicas
	if sat := cfg.Env.Saturate; sat != nil {
		if o.Offline != "" {
			return cfg, fmt.Errorf("--preset saturate learns online only")
		}
		sat.Nodes, sat.Pods = o.Nodes, o.Pods
		if err := env.CheckTraceFile("--nodes", o.Nodes); err != nil {
			return cfg, err
		}
		if err := env.CheckTraceFile("--pods", o.Pods); err != nil {
			return cfg, err
		}
		if !o.Set("eval-seeds") {
			o.EvalSeeds = SaturateEvalSeeds
		}
	}
	cfg.RunID, cfg.Seed, cfg.Actors, cfg.SegmentLen = o.RunID, o.Seed, o.Actors, o.SegmentLen
	cfg.Sync, cfg.MaxLag, cfg.Transport, cfg.NATSURL, cfg.Token = o.Sync, o.MaxLag, o.Transport, o.NATSURL, o.Token
	if o.CheckpointEvery > 0 {
		cfg.CheckpointDir, cfg.CheckpointEvery = filepath.Join(o.Out, "checkpoint"), o.CheckpointEvery
	}
	cfg.Resume = o.Resume
	if o.Init != "" {
		if cfg.Init, _, err = ReadPolicyFile(o.Init); err != nil {
			return cfg, fmt.Errorf("--init: %w", err)
		}
	}
	return cfg, nil
}

// evalSets parses EvalSeeds and EvalRefs.
func (o *TrainOptions) evalSets() (seeds []uint64, refs []string, err error) {
	if o.EvalSeeds == "" {
		return nil, nil, nil
	}
	if seeds, err = report.ParseSeeds(o.EvalSeeds); err != nil {
		return nil, nil, err
	}
	for _, name := range strings.Split(o.EvalRefs, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		if _, err := BuiltinEntry(name); err != nil {
			return nil, nil, fmt.Errorf("--eval-ref: %w", err)
		}
		refs = append(refs, name)
	}
	return seeds, refs, nil
}

// Run checks o, trains (RunTrain, or RunOffline with Offline) into Out
// and prints the summary to w.
func (o TrainOptions) Run(ctx context.Context, w io.Writer) error {
	if o.Out == "" {
		return fmt.Errorf("--out DIR is required")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Preset == "gavel" || o.Preset == "gavel-single" {
		return o.runGavel(ctx, w)
	}
	if o.Tiered {
		return fmt.Errorf("--tiered: only the gavel presets train a tiered policy")
	}
	if o.Pack {
		return fmt.Errorf("--pack: only the gavel presets train a packed scored policy")
	}
	if o.Exchange {
		return fmt.Errorf("--exchange: only the gavel presets train a scored policy with an exchange pass")
	}
	if o.Consolidate {
		return fmt.Errorf("--consolidate: only the gavel presets train a scored policy that consolidates gangs")
	}
	if o.Upgrade {
		return fmt.Errorf("--upgrade: only the gavel presets train a scored policy with upgrades")
	}
	if o.Clairvoyant {
		return fmt.Errorf("--clairvoyant: only the gavel presets train a clairvoyant policy")
	}
	if o.given("tail-weight") {
		return fmt.Errorf("--tail-weight: only the gavel presets charge a run's p99 JCT")
	}
	if o.GavelRates != "" {
		return fmt.Errorf("--rates: only the gavel presets train at arrival rates (the other presets take --load)")
	}
	if o.GavelScenarios != "" {
		return fmt.Errorf("--train-scenarios: only the gavel presets train on GPU clusters")
	}
	if o.GavelMethod != "" {
		return fmt.Errorf("--method: only the gavel presets choose a method (the other presets train with PPO over NATS actors)")
	}
	cfg, err := o.config()
	if err != nil {
		return err
	}
	cfg.Logger = o.Logger
	seeds, refs, err := o.evalSets()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	if cfg.User, cfg.Password, err = transport.CredentialsFrom(o.Credentials); err != nil {
		return fmt.Errorf("--credentials: %w", err)
	}
	var pub string
	if cfg.SigningKey, pub, err = transport.RunSigningKey(o.Out, o.Seed, o.KeyFromSeed, o.Resume != ""); err != nil {
		return err
	}
	o.Logger.Info("parameters and policies signed", "public_key", pub)
	if o.Offline != "" {
		return o.runOffline(ctx, w, cfg, seeds, refs)
	}
	bar := report.NewProgress(o.Bar, cfg.TotalSteps, "train")
	cfg.Progress = func(l UpdateLog) {
		_ = bar.Add(cfg.BatchSize)
		o.Logger.Debug("update", "update", l.Update, "steps", l.Steps, "return", l.EpisodeReturn, "slowdown", l.MeanSlowdown,
			"kl", l.ApproxKL, "clip", l.ClipFrac, "ev", l.ExplainedVar, "entropy", l.Entropy)
	}
	sum, err := RunTrain(ctx, TrainRun{Config: cfg, Preset: o.Preset, Out: o.Out, Command: o.Command, EvalSeeds: seeds, EvalRefs: refs})
	_ = bar.Finish()
	if err != nil {
		return err
	}
	if o.JSON {
		return WriteSummaryJSON(w, sum)
	}
	return WriteTrainSummary(w, sum, o.Out)
}

// runOffline learns from the recordings of Offline, then evaluates like an
// online run.
func (o TrainOptions) runOffline(ctx context.Context, w io.Writer, cfg TrainConfig, seeds []uint64, refs []string) error {
	pol, err := NewPolicy(cfg.Policy, cfg.Seed)
	if err != nil {
		return err
	}
	if cfg.Init != nil {
		if _, err := pol.LoadParams(cfg.Init); err != nil {
			return fmt.Errorf("--init: %w", err)
		}
	}
	if o.OfflineRef != "" {
		if _, err := env.NewScheduler(o.OfflineRef); err != nil {
			return fmt.Errorf("--offline-ref: %w", err)
		}
	}
	ocfg := o.OfflineConfig
	ocfg.Seed = cfg.Seed
	if o.Set("lr") {
		ocfg.LR = o.LR
	}
	sum, err := RunOffline(ctx, OfflineRun{Policy: pol, PolicyConfig: cfg.Policy, Recordings: strings.Split(o.Offline, ","), Ref: o.OfflineRef,
		Gamma: cfg.PPO.Gamma, RewardScale: cfg.Env.RewardScale, Offline: ocfg, Preset: o.Preset, Out: o.Out, SigningKey: cfg.SigningKey,
		Command: o.Command, Env: cfg.Env, EvalSeeds: seeds, EvalRefs: refs,
		Loaded: func(dir, spec string, decisions int) {
			o.Logger.Info("offline recording", "dir", dir, "scheduler", spec, "decisions", decisions)
		}})
	if err != nil {
		return err
	}
	if o.JSON {
		return WriteSummaryJSON(w, sum)
	}
	last := sum.Log[len(sum.Log)-1]
	fmt.Fprintf(w, "offline %s on %d decisions from %d recordings, %d epochs in %.0f s: agreement with the recorded choices %.3f, policy loss %.3f; policy in %s\n",
		ocfg.Method, sum.Decisions, len(sum.Recordings), len(sum.Log), sum.WallS, last.Agreement, last.PolicyLoss, filepath.Join(o.Out, "policy.safetensors"))
	return report.WriteEvalText(w, sum.EvalSeeds, sum.Eval, sum.Paired)
}

// WriteTrainSummary prints a training run's summary as tegrl train does:
// the run, the last updates' training episodes and the evaluation on the
// held-out seeds; dir is the run's output directory.
func WriteTrainSummary(w io.Writer, s *TrainSummary, dir string) error {
	fmt.Fprintf(w, "trained %d updates, %d decisions in %.0f s; policy in %s\n", s.Updates, s.Steps, s.WallS, filepath.Join(dir, "policy.safetensors"))
	if len(s.Saturation) > 0 || s.Config.Env.Saturate != nil {
		fmt.Fprintf(w, "last 10 updates: %d training episodes, return %.1f GPUs allocated; final update: approx KL %.4f, clip %.3f, explained variance %.3f, entropy %.3f\n",
			s.Recent.Episodes, s.Recent.EpisodeReturn, s.Final.ApproxKL, s.Final.ClipFrac, s.Final.ExplainedVar, s.Final.Entropy)
		if len(s.Saturation) == 0 {
			return nil
		}
		fmt.Fprintf(w, "saturation experiment, held-out seeds %s:\n", report.FormatSeeds(s.EvalSeeds))
		return report.WriteSaturationText(w, s.Saturation)
	}
	fmt.Fprintf(w, "last 10 updates: %d training episodes, return %.2f, slowdown %.3f; final update: approx KL %.4f, clip %.3f, explained variance %.3f, entropy %.3f, converged %v\n",
		s.Recent.Episodes, s.Recent.EpisodeReturn, s.Recent.MeanSlowdown, s.Final.ApproxKL, s.Final.ClipFrac, s.Final.ExplainedVar, s.Final.Entropy, s.Converged)
	return report.WriteEvalText(w, s.EvalSeeds, s.Eval, s.Paired)
}

// WriteSummaryJSON prints a run's summary as its summary.json holds it
// (indented, with a final newline).
func WriteSummaryJSON(w io.Writer, v any) error {
	js, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", js)
	return err
}
