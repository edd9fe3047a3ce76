package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
	"github.com/tegrl/tegrl/rl"
)

// trainFlags are the flags of `tegrl train`.
type trainFlags struct {
	preset     string
	out        string
	seed       uint64
	actors     int
	steps      int
	batch      int
	segment    int
	sync       bool
	maxLag     uint64
	transport  string
	natsURL    string
	token      string
	runID      string
	machines   int
	load       float64
	episode    float64
	evalSeeds  string
	nodes      string
	pods       string
	offRef     string
	evalRefs   string
	lr         float64
	entCoef    float64
	gamma      float64
	shaping    float64
	candidates int
	hidden     int
	encoder    string
	reward     string
	baseline   string
	ckptEvery  int
	resume     string
	offline    string
	offMethod  string
	offEpochs  int
	awrBeta    float64
	awrLambda  float64
	init       string
	replicas   bool
	jsonOut    bool
	creds      string
	keyPerSeed bool
}

func init() { addCommand(newTrainCmd) }

func newTrainCmd(a *app) *cobra.Command {
	f := &trainFlags{}
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train a placement + damping policy with PPO and IMPALA-style actors over NATS",
		Long: `train learns a scheduling policy on the TEG cluster simulator. Actors run
episodes with a local copy of the policy and publish trajectory segments over
NATS; the learner corrects their lag with V-trace, runs PPO updates and
broadcasts versioned parameters. By default everything runs in this process
around an embedded NATS server on a random loopback port; --nats points the
learner at an external server, where more actors can join with tegrl actor.

It writes DIR/policy.safetensors (weights plus metadata), DIR/train_log.csv,
DIR/learning_curve.png and DIR/summary.json, and evaluates the policy against
langevin and reference schedulers on held-out seeds.

Presets:
  small   a 96-machine synthetic cluster with bursty AI jobs at 90% load,
          two-hour episodes, slowdown reward relative to langevin on the
          same seed; 1M decisions, batches of 2,000, lr 1e-3 (about 2
          minutes on 2 cores)
  saturate  the FGD saturation experiment on the Alibaba GPU trace
          (--nodes, --pods): an episode is one seed's pod sequence, each pod
          a decision among the 8 machines FGD scores best, the reward the
          GPUs each decision allocates, shaped (docs/rl.md); 1M decisions,
          γ 0.999 (about 1.5 minutes on 2 cores); evaluated
          with tegrl saturate against fgd and bestfit on seeds 42-51`,
		Example: `  tegrl train --preset small --out runs/small
  tegrl train --preset saturate --out runs/saturate
  tegrl broker --listen 127.0.0.1:4222 &
  tegrl train --preset small --nats nats://127.0.0.1:4222 --actors 0 --out runs/dist &
  tegrl actor --nats nats://127.0.0.1:4222 --id 1 & tegrl actor --nats nats://127.0.0.1:4222 --id 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTrain(cmd.Context(), a, f, cmd)
		},
	}
	fl, off := cmd.Flags(), rl.DefaultOfflineConfig()
	fl.StringVar(&f.preset, "preset", "small", "training preset: small or saturate")
	fl.StringVar(&f.out, "out", "", "output directory (required)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the network initialisation, the actors' episodes and the minibatches")
	fl.IntVar(&f.actors, "actors", 1, "in-process actors (0: only remote tegrl actor processes); on 2 cores one actor keeps the learner busy")
	fl.IntVar(&f.steps, "steps", 0, "decisions to learn from (default: the preset's)")
	fl.IntVar(&f.batch, "batch", 0, "decisions per PPO update (default: the preset's)")
	fl.IntVar(&f.segment, "segment", rl.DefaultSegmentLen, "steps per trajectory segment")
	fl.BoolVar(&f.sync, "sync", true, "in-process actors wait for every update (on-policy lockstep; with --actors 1 the run is deterministic); --sync=false for IMPALA's asynchronous actors")
	fl.Uint64Var(&f.maxLag, "max-lag", rl.DefaultMaxLag, "drop segments more than this many policy versions old")
	fl.StringVar(&f.transport, "transport", "nats", "nats, or chan (in-process channels, for comparison)")
	fl.StringVar(&f.natsURL, "nats", "", "NATS server URL (default: an embedded server on a random loopback port)")
	fl.StringVar(&f.token, "token", "", "NATS token (also for the embedded server)")
	fl.StringVar(&f.runID, "run", "train", "run id: scopes the NATS subjects (letters, digits, - and _)")
	fl.IntVar(&f.machines, "machines", 0, "machines of the synthetic cluster (default: the preset's)")
	fl.Float64Var(&f.load, "load", 0, "offered load (default: the preset's)")
	fl.Float64Var(&f.episode, "episode", 0, "simulated seconds per episode (default: the preset's)")
	fl.StringVar(&f.evalSeeds, "eval-seeds", rl.EvalSeeds, "held-out seeds of the final evaluation (\"\" skips it; --preset saturate: "+rl.SaturateEvalSeeds+" unless given)")
	fl.StringVar(&f.nodes, "nodes", defaultGPUNodes, "--preset saturate: Alibaba GPU trace node table: alibaba-gpu (bundled nodes.csv) or alibaba-gpu:FILE")
	fl.StringVar(&f.pods, "pods", defaultGPUPods, "--preset saturate: Alibaba GPU trace pod table: alibaba-gpu (bundled pods.csv) or alibaba-gpu:FILE")
	fl.StringVar(&f.evalRefs, "eval-ref", "langevin,kube,bestfit,fgd", "schedulers the policy is compared with")
	fl.Float64Var(&f.lr, "lr", 0, "Adam learning rate (default: the preset's)")
	fl.Float64Var(&f.entCoef, "ent-coef", rl.DefaultEntCoef, "weight of the placement entropy bonus")
	fl.Float64Var(&f.gamma, "gamma", 0, "discount per decision (default: the preset's)")
	fl.Float64Var(&f.shaping, "shaping", 0, "potential-based reward shaping from the reward baseline's load: horizon in simulated seconds (0: off; docs/rl.md)")
	fl.IntVar(&f.candidates, "candidates", 0, "candidate machines per decision (default: the preset's)")
	fl.IntVar(&f.hidden, "hidden", 0, "hidden width (default: the preset's)")
	fl.StringVar(&f.encoder, "encoder", "", "candidate encoder: mlp, or gnn (temporal and graph layers on the decision's candidate graph; docs/rl.md) (default: the preset's)")
	fl.BoolVar(&f.replicas, "replicas", false, "let the policy change services' replica counts (off: deltas are 0; see docs/rl.md)")
	fl.StringVar(&f.reward, "reward", "", "reward: slowdown or teg (default: the preset's)")
	fl.StringVar(&f.baseline, "reward-baseline", "", "scheduler run alongside whose accrual each reward is relative to (\"\": none; default: the preset's)")
	fl.IntVar(&f.ckptEvery, "checkpoint-every", rl.DefaultCheckpointEvery, "write DIR/checkpoint every this many updates and at the end (0: never)")
	fl.StringVar(&f.resume, "resume", "", "continue the run whose checkpoint directory this is (same flags; with --actors 1 --sync the numbers are those of an uninterrupted run)")
	fl.StringVar(&f.offline, "offline", "", "learn offline from recordings of tegrl dataset record (comma-separated folders) instead of online")
	fl.StringVar(&f.offMethod, "offline-method", "bc", "offline method: bc (behaviour cloning) or awr (advantage-weighted regression)")
	fl.IntVar(&f.offEpochs, "offline-epochs", off.Epochs, "passes over the offline data")
	fl.StringVar(&f.offRef, "offline-ref", "", "built-in scheduler run beside each recording: rewards become relative to its accrual (\"\": raw rewards)")
	fl.Float64Var(&f.awrBeta, "awr-beta", off.Beta, "AWR temperature β on normalised advantages (smaller: greedier)")
	fl.Float64Var(&f.awrLambda, "awr-lambda", off.Lambda, "AWR's TD(λ) for advantages and value targets: 1 uses the Monte Carlo returns, less bootstraps from the value function")
	fl.StringVar(&f.init, "init", "", "start from this policy (a policy file or train output folder of the same shape), e.g. an offline one")
	fl.BoolVar(&f.jsonOut, "json", false, "print the summary as JSON")
	fl.StringVar(&f.creds, "credentials", "", "file of the learner's NATS user credentials (NAME:PASSWORD) for --nats (default: the file $TEGRL_NATS_CREDENTIALS names)")
	fl.BoolVar(&f.keyPerSeed, "sign-key-from-seed", false, "derive the signing key from --seed instead of crypto/rand (reproducible signatures; anyone who knows the seed can sign)")
	return cmd
}

// trainConfig is the run's configuration: the preset with the flags given
// applied (a flag left out keeps the preset's value).
func trainConfig(f *trainFlags, cmd *cobra.Command) (rl.TrainConfig, error) {
	cfg, err := rl.Preset(f.preset)
	if err != nil {
		return cfg, err
	}
	ch := cmd.Flags().Changed
	for _, o := range []struct {
		flag string
		set  func()
	}{
		{"steps", func() { cfg.TotalSteps = f.steps }}, {"batch", func() { cfg.BatchSize = f.batch }},
		{"machines", func() { cfg.Env.Machines = f.machines }}, {"load", func() { cfg.Env.Load = f.load }},
		{"episode", func() { cfg.Env.Episode = f.episode }}, {"lr", func() { cfg.PPO.LR = f.lr }},
		{"gamma", func() { cfg.PPO.Gamma = f.gamma }}, {"ent-coef", func() { cfg.PPO.EntCoef = f.entCoef }},
		{"candidates", func() { cfg.Policy.Candidates = f.candidates }}, {"hidden", func() { cfg.Policy.Hidden = f.hidden }},
		{"reward", func() { cfg.Env.Reward = f.reward }}, {"reward-baseline", func() { cfg.Env.Baseline = f.baseline }},
		{"encoder", func() { cfg.Policy.Encoder = map[bool]string{true: "", false: f.encoder}[f.encoder == "mlp"] }},
	} {
		if ch(o.flag) {
			o.set()
		}
	}
	if f.shaping > 0 {
		cfg.Env.Shaping, cfg.Env.ShapingGamma = f.shaping, cfg.PPO.Gamma
	}
	cfg.Policy.Replicas = f.replicas
	if sat := cfg.Env.Saturate; sat != nil {
		if f.offline != "" {
			return cfg, fmt.Errorf("--preset saturate learns online only")
		}
		sat.Nodes, sat.Pods = f.nodes, f.pods
		if err := checkTrace("--nodes", f.nodes); err != nil {
			return cfg, err
		}
		if err := checkTrace("--pods", f.pods); err != nil {
			return cfg, err
		}
		if !ch("eval-seeds") {
			f.evalSeeds = rl.SaturateEvalSeeds
		}
	}
	cfg.RunID, cfg.Seed, cfg.Actors, cfg.SegmentLen = f.runID, f.seed, f.actors, f.segment
	cfg.Sync, cfg.MaxLag, cfg.Transport, cfg.NATSURL, cfg.Token = f.sync, f.maxLag, f.transport, f.natsURL, f.token
	if f.ckptEvery > 0 {
		cfg.CheckpointDir, cfg.CheckpointEvery = filepath.Join(f.out, "checkpoint"), f.ckptEvery
	}
	cfg.Resume = f.resume
	if f.init != "" {
		if cfg.Init, _, err = rl.ReadPolicyFile(f.init); err != nil {
			return cfg, fmt.Errorf("--init: %w", err)
		}
	}
	return cfg, nil
}

// evalFlags parses --eval-seeds and --eval-ref.
func evalFlags(f *trainFlags) (seeds []uint64, refs []string, err error) {
	if f.evalSeeds == "" {
		return nil, nil, nil
	}
	if seeds, err = report.ParseSeeds(f.evalSeeds); err != nil {
		return nil, nil, err
	}
	for _, name := range strings.Split(f.evalRefs, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		if _, err := rl.BuiltinEntry(name); err != nil {
			return nil, nil, fmt.Errorf("--eval-ref: %w", err)
		}
		refs = append(refs, name)
	}
	return seeds, refs, nil
}

func runTrain(ctx context.Context, a *app, f *trainFlags, cmd *cobra.Command) error {
	if f.out == "" {
		return fmt.Errorf("--out DIR is required")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	cfg, err := trainConfig(f, cmd)
	if err != nil {
		return err
	}
	cfg.Logger = a.log
	seeds, refs, err := evalFlags(f)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	if cfg.User, cfg.Password, err = credentialsFrom(f.creds); err != nil {
		return err
	}
	var pub string
	if cfg.SigningKey, pub, err = runSigningKey(f.out, f.seed, f.keyPerSeed, f.resume != ""); err != nil {
		return err
	}
	a.log.Info("parameters and policies signed", "public_key", pub)
	if f.offline != "" {
		return runOffline(ctx, a, f, cmd, cfg, seeds, refs)
	}
	bar := newProgress(a.stderr, cfg.TotalSteps, "train")
	cfg.Progress = func(l rl.UpdateLog) {
		_ = bar.Add(cfg.BatchSize)
		a.log.Debug("update", "update", l.Update, "steps", l.Steps, "return", l.EpisodeReturn, "slowdown", l.MeanSlowdown,
			"kl", l.ApproxKL, "clip", l.ClipFrac, "ev", l.ExplainedVar, "entropy", l.Entropy)
	}
	sum, err := rl.RunTrain(ctx, rl.TrainRun{Config: cfg, Preset: f.preset, Out: f.out, Command: report.CommandLine(a.argv),
		EvalSeeds: seeds, EvalRefs: refs})
	_ = bar.Finish()
	if err != nil {
		return err
	}
	if f.jsonOut {
		return printSummaryJSON(a.stdout, sum)
	}
	return printTrainSummary(a.stdout, sum, f.out)
}

// runOffline learns from the recordings of --offline, then evaluates like
// an online run.
func runOffline(ctx context.Context, a *app, f *trainFlags, cmd *cobra.Command, cfg rl.TrainConfig, seeds []uint64, refs []string) error {
	pol, err := rl.NewPolicy(cfg.Policy, cfg.Seed)
	if err != nil {
		return err
	}
	if cfg.Init != nil {
		if _, err := pol.LoadParams(cfg.Init); err != nil {
			return fmt.Errorf("--init: %w", err)
		}
	}
	if f.offRef != "" {
		if _, err := env.NewScheduler(f.offRef); err != nil {
			return fmt.Errorf("--offline-ref: %w", err)
		}
	}
	ocfg := rl.DefaultOfflineConfig()
	ocfg.Method, ocfg.Epochs, ocfg.Seed, ocfg.Beta, ocfg.Lambda = f.offMethod, f.offEpochs, cfg.Seed, f.awrBeta, f.awrLambda
	if cmd.Flags().Changed("lr") {
		ocfg.LR = f.lr
	}
	sum, err := rl.RunOffline(ctx, rl.OfflineRun{Policy: pol, PolicyConfig: cfg.Policy, Recordings: strings.Split(f.offline, ","), Ref: f.offRef,
		Gamma: cfg.PPO.Gamma, RewardScale: cfg.Env.RewardScale, Offline: ocfg, Preset: f.preset, Out: f.out, SigningKey: cfg.SigningKey,
		Command: report.CommandLine(a.argv), Env: cfg.Env, EvalSeeds: seeds, EvalRefs: refs,
		Loaded: func(dir, spec string, decisions int) {
			a.log.Info("offline recording", "dir", dir, "scheduler", spec, "decisions", decisions)
		}})
	if err != nil {
		return err
	}
	if f.jsonOut {
		return printSummaryJSON(a.stdout, sum)
	}
	last := sum.Log[len(sum.Log)-1]
	fmt.Fprintf(a.stdout, "offline %s on %d decisions from %d recordings, %d epochs in %.0f s: agreement with the recorded choices %.3f, policy loss %.3f; policy in %s\n",
		ocfg.Method, sum.Decisions, len(sum.Recordings), len(sum.Log), sum.WallS, last.Agreement, last.PolicyLoss, filepath.Join(f.out, "policy.safetensors"))
	return report.WriteEvalText(a.stdout, sum.EvalSeeds, sum.Eval, sum.Paired)
}

func printTrainSummary(w io.Writer, s *rl.TrainSummary, dir string) error {
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

// printSummaryJSON prints a run's summary as summary.json holds it.
func printSummaryJSON(w io.Writer, v any) error {
	js, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", js)
	return err
}
