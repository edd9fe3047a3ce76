package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/replay"
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
	fl := cmd.Flags()
	fl.StringVar(&f.preset, "preset", "small", "training preset: small or saturate")
	fl.StringVar(&f.out, "out", "", "output directory (required)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the network initialisation, the actors' episodes and the minibatches")
	fl.IntVar(&f.actors, "actors", 1, "in-process actors (0: only remote tegrl actor processes); on 2 cores one actor keeps the learner busy")
	fl.IntVar(&f.steps, "steps", 0, "decisions to learn from (default: the preset's)")
	fl.IntVar(&f.batch, "batch", 0, "decisions per PPO update (default: the preset's)")
	fl.IntVar(&f.segment, "segment", 100, "steps per trajectory segment")
	fl.BoolVar(&f.sync, "sync", true, "in-process actors wait for every update (on-policy lockstep; with --actors 1 the run is deterministic); --sync=false for IMPALA's asynchronous actors")
	fl.Uint64Var(&f.maxLag, "max-lag", 8, "drop segments more than this many policy versions old")
	fl.StringVar(&f.transport, "transport", "nats", "nats, or chan (in-process channels, for comparison)")
	fl.StringVar(&f.natsURL, "nats", "", "NATS server URL (default: an embedded server on a random loopback port)")
	fl.StringVar(&f.token, "token", "", "NATS token (also for the embedded server)")
	fl.StringVar(&f.runID, "run", "train", "run id: scopes the NATS subjects (letters, digits, - and _)")
	fl.IntVar(&f.machines, "machines", 0, "machines of the synthetic cluster (default: the preset's)")
	fl.Float64Var(&f.load, "load", 0, "offered load (default: the preset's)")
	fl.Float64Var(&f.episode, "episode", 0, "simulated seconds per episode (default: the preset's)")
	fl.StringVar(&f.evalSeeds, "eval-seeds", "101-110", "held-out seeds of the final evaluation (\"\" skips it; --preset saturate: 42-51 unless given)")
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
	fl.IntVar(&f.ckptEvery, "checkpoint-every", 10, "write DIR/checkpoint every this many updates and at the end (0: never)")
	fl.StringVar(&f.resume, "resume", "", "continue the run whose checkpoint directory this is (same flags; with --actors 1 --sync the numbers are those of an uninterrupted run)")
	fl.StringVar(&f.offline, "offline", "", "learn offline from recordings of tegrl dataset record (comma-separated folders) instead of online")
	fl.StringVar(&f.offMethod, "offline-method", "bc", "offline method: bc (behaviour cloning) or awr (advantage-weighted regression)")
	fl.IntVar(&f.offEpochs, "offline-epochs", 10, "passes over the offline data")
	fl.StringVar(&f.offRef, "offline-ref", "", "built-in scheduler run beside each recording: rewards become relative to its accrual (\"\": raw rewards)")
	fl.Float64Var(&f.awrBeta, "awr-beta", 1, "AWR temperature β on normalised advantages (smaller: greedier)")
	fl.Float64Var(&f.awrLambda, "awr-lambda", 1, "AWR's TD(λ) for advantages and value targets: 1 uses the Monte Carlo returns, less bootstraps from the value function")
	fl.StringVar(&f.init, "init", "", "start from this policy (a policy file or train output folder of the same shape), e.g. an offline one")
	fl.BoolVar(&f.jsonOut, "json", false, "print the summary as JSON")
	fl.StringVar(&f.creds, "credentials", "", "file of the learner's NATS user credentials (NAME:PASSWORD) for --nats (default: the file $TEGRL_NATS_CREDENTIALS names)")
	fl.BoolVar(&f.keyPerSeed, "sign-key-from-seed", false, "derive the signing key from --seed instead of crypto/rand (reproducible signatures; anyone who knows the seed can sign)")
	return cmd
}

// trainSummary is summary.json.
type trainSummary struct {
	Command   string            `json:"command"`
	Preset    string            `json:"preset"`
	Config    rl.TrainConfig    `json:"config"`
	Updates   int               `json:"updates"`
	Steps     uint64            `json:"steps"`
	WallS     float64           `json:"wall_s"`
	Final     rl.UpdateLog      `json:"final_update"`
	Recent    recent            `json:"last_10_updates"`
	Converged bool              `json:"converged"`
	EvalSeeds []uint64          `json:"eval_seeds,omitempty"`
	Eval      []evalRow         `json:"eval,omitempty"`
	Paired    map[string]paired `json:"paired_vs_policy,omitempty"`
	// Saturation is the saturate preset's evaluation: the FGD protocol on
	// the held-out seeds for the policy, fgd and bestfit.
	Saturation []report.SaturationSummary `json:"saturation,omitempty"`
}

type evalRow struct {
	Scheduler        string  `json:"scheduler"`
	MeanSlowdown     float64 `json:"mean_slowdown"`
	MeanJCTS         float64 `json:"mean_jct_s"`
	SLAViolationRate float64 `json:"sla_violation_rate"`
	SafetyViolations int     `json:"safety_violations"`
	RewardMean       float64 `json:"reward_mean"`
	JobsCompleted    float64 `json:"jobs_completed"`
}

// evalRowOf averages one scheduler's runs over their seeds (safety
// violations are summed).
func evalRowOf(name string, runs []rl.EvalRun) evalRow {
	row := evalRow{Scheduler: name}
	n := float64(len(runs))
	for _, r := range runs {
		m := r.Metrics
		row.MeanSlowdown += m.MeanSlowdown / n
		row.MeanJCTS += m.MeanJCTS / n
		row.SLAViolationRate += m.SLAViolationRate / n
		row.SafetyViolations += m.SafetyViolations
		row.RewardMean += m.RewardMean / n
		row.JobsCompleted += float64(m.JobsCompleted) / n
	}
	return row
}

// paired is the policy's mean slowdown against a reference, paired by seed.
type paired struct {
	RefSlowdown    float64 `json:"ref_mean_slowdown"`
	PolicySlowdown float64 `json:"policy_mean_slowdown"`
	DiffMean       float64 `json:"diff_mean"` // policy - reference
	CILow          float64 `json:"ci_low"`
	CIHigh         float64 `json:"ci_high"`
	RelChangePct   float64 `json:"rel_change_pct"`
	SLADiff        float64 `json:"sla_violation_diff"`
}

func runTrain(ctx context.Context, a *app, f *trainFlags, cmd *cobra.Command) error {
	if f.out == "" {
		return fmt.Errorf("--out DIR is required")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	cfg, err := rl.Preset(f.preset)
	if err != nil {
		return err
	}
	// A flag given overrides its field of the preset; one left out keeps it.
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
			return fmt.Errorf("--preset saturate learns online only")
		}
		sat.Nodes, sat.Pods = f.nodes, f.pods
		if err := checkTrace("--nodes", f.nodes); err != nil {
			return err
		}
		if err := checkTrace("--pods", f.pods); err != nil {
			return err
		}
		if !cmd.Flags().Changed("eval-seeds") {
			f.evalSeeds = "42-51"
		}
	}
	envCfg := cfg.Env.Config()
	cfg.RunID, cfg.Seed, cfg.Actors, cfg.SegmentLen = f.runID, f.seed, f.actors, f.segment
	cfg.Sync, cfg.MaxLag, cfg.Transport, cfg.NATSURL, cfg.Token = f.sync, f.maxLag, f.transport, f.natsURL, f.token
	cfg.Logger = a.log
	if f.ckptEvery > 0 {
		cfg.CheckpointDir, cfg.CheckpointEvery = filepath.Join(f.out, "checkpoint"), f.ckptEvery
	}
	cfg.Resume = f.resume
	if f.init != "" {
		if cfg.Init, _, err = rl.ReadPolicyFile(f.init); err != nil {
			return fmt.Errorf("--init: %w", err)
		}
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
		return runOffline(ctx, a, f, cfg, envCfg)
	}
	bar := newProgress(a.stderr, cfg.TotalSteps, "train")
	cfg.Progress = func(l rl.UpdateLog) {
		_ = bar.Add(cfg.BatchSize)
		a.log.Debug("update", "update", l.Update, "steps", l.Steps, "return", l.EpisodeReturn, "slowdown", l.MeanSlowdown,
			"kl", l.ApproxKL, "clip", l.ClipFrac, "ev", l.ExplainedVar, "entropy", l.Entropy)
	}
	start := time.Now()
	a.log.Info("train", "preset", f.preset, "machines", cfg.Env.Machines, "load", cfg.Env.Load, "episode_s", cfg.Env.Episode,
		"steps", cfg.TotalSteps, "batch", cfg.BatchSize, "actors", cfg.Actors, "transport", cfg.Transport, "sync", cfg.Sync)
	res, err := rl.Train(ctx, cfg)
	_ = bar.Finish()
	if err != nil {
		return err
	}
	wall := time.Since(start).Seconds()
	l := res.Learner
	meta := map[string]string{"tegrl.run": cfg.RunID, "tegrl.version": strconv.FormatUint(l.Version(), 10),
		"tegrl.steps": strconv.FormatUint(res.Log[len(res.Log)-1].Steps, 10), "tegrl.preset": f.preset}
	// The training scale, where the preset does not say it (so that the
	// presets' files stay byte-identical): rl.FitOf reads it.
	if cfg.Env.Saturate == nil && cfg.Env.Machines > 0 && (f.preset != "small" || cfg.Env.Machines != rl.SmallMachines) {
		meta[rl.MetaMachines] = strconv.Itoa(cfg.Env.Machines)
	}
	payload, err := l.Pol.EncodeParams(meta)
	if err != nil {
		return err
	}
	if err := writeSignedPolicy(filepath.Join(f.out, "policy.safetensors"), payload, cfg.SigningKey); err != nil {
		return err
	}
	if err := writeTrainLog(filepath.Join(f.out, "train_log.csv"), res.Log); err != nil {
		return err
	}
	sum := trainSummary{Command: report.CommandLine(a.argv), Preset: f.preset, Config: cfg, Updates: len(res.Log),
		Steps: res.Log[len(res.Log)-1].Steps, WallS: wall, Final: res.Log[len(res.Log)-1], Converged: res.Log[len(res.Log)-1].Converged,
		Recent: recentEpisodes(res.Log, 10)}
	var refs []report.CurveRef
	if f.evalSeeds != "" {
		seeds, err := report.ParseSeeds(f.evalSeeds)
		if err != nil {
			return err
		}
		sum.EvalSeeds = seeds
		if cfg.Env.Saturate != nil {
			if sum.Saturation, err = evalSaturation(ctx, payload, cfg.Env.Saturate, seeds); err != nil {
				return err
			}
		} else {
			if err := evalPolicy(ctx, &sum, payload, envCfg.Source, cfg.Env.Episode, seeds, f.evalRefs); err != nil {
				return err
			}
			for _, r := range sum.Eval[1:] {
				refs = append(refs, report.CurveRef{Label: r.Scheduler + " (held-out)", Y: r.MeanSlowdown})
			}
		}
	}
	if err := saveCurve(filepath.Join(f.out, "learning_curve.png"), res.Log, refs, cfg.Env.Saturate == nil); err != nil {
		return err
	}
	js, err := writeJSONFile(filepath.Join(f.out, "summary.json"), sum)
	if err != nil {
		return err
	}
	if f.jsonOut {
		_, err = fmt.Fprintf(a.stdout, "%s\n", js)
		return err
	}
	return printTrainSummary(a.stdout, &sum, f.out)
}

// offlineSummary is summary.json of an offline run.
type offlineSummary struct {
	Command    string            `json:"command"`
	Recordings []string          `json:"recordings"`
	Decisions  int               `json:"decisions"`
	Offline    rl.OfflineConfig  `json:"offline"`
	Policy     rl.PolicyConfig   `json:"policy"`
	Log        []rl.OfflineStats `json:"log"`
	WallS      float64           `json:"wall_s"`
	EvalSeeds  []uint64          `json:"eval_seeds,omitempty"`
	Eval       []evalRow         `json:"eval,omitempty"`
	Paired     map[string]paired `json:"paired_vs_policy,omitempty"`
}

// runOffline learns from recordings, then evaluates like an online run.
func runOffline(ctx context.Context, a *app, f *trainFlags, cfg rl.TrainConfig, envCfg rl.ClusterEnvConfig) error {
	start := time.Now()
	pol, err := rl.NewPolicy(cfg.Policy, cfg.Seed)
	if err != nil {
		return err
	}
	if cfg.Init != nil {
		if _, err := pol.LoadParams(cfg.Init); err != nil {
			return fmt.Errorf("--init: %w", err)
		}
	}
	var data rl.OfflineData
	dirs := strings.Split(f.offline, ",")
	if f.offRef != "" {
		if _, err := env.NewScheduler(f.offRef); err != nil {
			return fmt.Errorf("--offline-ref: %w", err)
		}
	}
	err = loadRecordings(f.offline, f.offRef, pol, cfg.PPO.Gamma, cfg.Env.RewardScale, &data, func(dir, spec string) {
		a.log.Info("offline recording", "dir", dir, "scheduler", spec, "decisions", data.Len())
	})
	if err != nil {
		return err
	}
	ocfg := rl.DefaultOfflineConfig()
	ocfg.Method, ocfg.Epochs, ocfg.Seed, ocfg.Beta, ocfg.Lambda = f.offMethod, f.offEpochs, cfg.Seed, f.awrBeta, f.awrLambda
	if f.lr > 0 {
		ocfg.LR = f.lr
	}
	log, err := rl.TrainOffline(pol, &data, ocfg)
	if err != nil {
		return err
	}
	payload, err := pol.EncodeParams(map[string]string{"tegrl.offline": ocfg.Method, "tegrl.preset": f.preset})
	if err != nil {
		return err
	}
	if err := writeSignedPolicy(filepath.Join(f.out, "policy.safetensors"), payload, cfg.SigningKey); err != nil {
		return err
	}
	sum := offlineSummary{Command: report.CommandLine(a.argv), Recordings: dirs, Decisions: data.Len(), Offline: ocfg,
		Policy: cfg.Policy, Log: log, WallS: time.Since(start).Seconds()}
	if f.evalSeeds != "" {
		seeds, err := report.ParseSeeds(f.evalSeeds)
		if err != nil {
			return err
		}
		ts := trainSummary{}
		if err := evalPolicy(ctx, &ts, payload, envCfg.Source, cfg.Env.Episode, seeds, f.evalRefs); err != nil {
			return err
		}
		sum.EvalSeeds, sum.Eval, sum.Paired = seeds, ts.Eval, ts.Paired
	}
	js, err := writeJSONFile(filepath.Join(f.out, "summary.json"), sum)
	if err != nil {
		return err
	}
	if f.jsonOut {
		_, err = fmt.Fprintf(a.stdout, "%s\n", js)
		return err
	}
	last := log[len(log)-1]
	fmt.Fprintf(a.stdout, "offline %s on %d decisions from %d recordings, %d epochs in %.0f s: agreement with the recorded choices %.3f, policy loss %.3f; policy in %s\n",
		ocfg.Method, data.Len(), len(dirs), len(log), sum.WallS, last.Agreement, last.PolicyLoss, filepath.Join(f.out, "policy.safetensors"))
	return printTrainSummary(a.stdout, &trainSummary{Eval: sum.Eval, Paired: sum.Paired, EvalSeeds: sum.EvalSeeds}, "")
}

// recent averages the training episodes of the last n updates.
type recent struct {
	Episodes      int     `json:"episodes"`
	EpisodeReturn float64 `json:"episodic_return"`
	MeanSlowdown  float64 `json:"mean_slowdown"`
	Reward        float64 `json:"reward_mean"`
}

func recentEpisodes(logs []rl.UpdateLog, n int) recent {
	var r recent
	for _, l := range logs[max(0, len(logs)-n):] {
		k := float64(l.Episodes)
		r.Episodes += l.Episodes
		r.EpisodeReturn += k * l.EpisodeReturn
		r.MeanSlowdown += k * l.MeanSlowdown
		r.Reward += k * l.Reward
	}
	if r.Episodes > 0 {
		k := float64(r.Episodes)
		r.EpisodeReturn, r.MeanSlowdown, r.Reward = r.EpisodeReturn/k, r.MeanSlowdown/k, r.Reward/k
	}
	return r
}

// evalPolicy runs the policy and the references on the held-out seeds.
func evalPolicy(ctx context.Context, sum *trainSummary, payload []byte, src rl.Source, episode float64, seeds []uint64, refs string) error {
	pe, err := rl.PolicyEntry("policy", payload)
	if err != nil {
		return err
	}
	entries := []rl.EvalEntry{pe}
	for _, name := range strings.Split(refs, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		e, err := rl.BuiltinEntry(name)
		if err != nil {
			return fmt.Errorf("--eval-ref: %w", err)
		}
		entries = append(entries, e)
	}
	runs, err := rl.Evaluate(ctx, src, episode, seeds, entries)
	if err != nil {
		return err
	}
	n := len(seeds)
	sum.Paired = map[string]paired{}
	for k, e := range entries {
		rs := runs[k*n : (k+1)*n]
		row := evalRowOf(e.Name, rs)
		sum.Eval = append(sum.Eval, row)
		if k == 0 {
			continue
		}
		diffs := make([]float64, n)
		var sla float64
		for i := range diffs {
			diffs[i] = runs[i].Metrics.MeanSlowdown - rs[i].Metrics.MeanSlowdown
			sla += (runs[i].Metrics.SLAViolationRate - rs[i].Metrics.SLAViolationRate) / float64(n)
		}
		lo, hi, err := report.BootstrapMeanCI(diffs, rl.EvalResamples, rl.EvalLevel, 1)
		if err != nil {
			return err
		}
		pr := paired{RefSlowdown: row.MeanSlowdown, PolicySlowdown: sum.Eval[0].MeanSlowdown, CILow: lo, CIHigh: hi, SLADiff: sla}
		pr.DiffMean = pr.PolicySlowdown - pr.RefSlowdown
		pr.RelChangePct = 100 * pr.DiffMean / pr.RefSlowdown
		sum.Paired[e.Name] = pr
	}
	return nil
}

// writeTrainLog writes one CSV row per update with the JSON names of
// UpdateLog's fields as the header.
func writeTrainLog(path string, logs []rl.UpdateLog) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	var header []string
	var row func(v reflect.Value) []string
	row = func(v reflect.Value) []string {
		var out []string
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			fv := v.Field(i)
			if t.Field(i).Anonymous {
				out = append(out, row(fv)...)
				continue
			}
			switch fv.Kind() {
			case reflect.Float64:
				out = append(out, strconv.FormatFloat(fv.Float(), 'g', 8, 64))
			default:
				out = append(out, fmt.Sprint(fv.Interface()))
			}
		}
		return out
	}
	var names func(t reflect.Type) []string
	names = func(t reflect.Type) []string {
		var out []string
		for i := 0; i < t.NumField(); i++ {
			if t.Field(i).Anonymous {
				out = append(out, names(t.Field(i).Type)...)
				continue
			}
			out = append(out, strings.Split(t.Field(i).Tag.Get("json"), ",")[0])
		}
		return out
	}
	header = names(reflect.TypeOf(rl.UpdateLog{}))
	if err := w.Write(header); err != nil {
		f.Close()
		return err
	}
	for _, l := range logs {
		if err := w.Write(row(reflect.ValueOf(l))); err != nil {
			f.Close()
			return err
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// saveCurve plots the training episodes' return and mean slowdown against
// the decisions learned from, each point the episode-weighted mean over the
// last curveWindow updates (single episodes vary with their workload far
// more than the policy does).
func saveCurve(path string, logs []rl.UpdateLog, refs []report.CurveRef, slowdown bool) error {
	const curveWindow = 25
	window := min(curveWindow, len(logs))
	x := make([]float64, len(logs))
	ret := make([]float64, len(logs))
	slow := make([]float64, len(logs))
	for i, l := range logs {
		x[i] = float64(l.Steps)
		var n, r, sd float64
		for _, w := range logs[max(0, i-curveWindow+1) : i+1] {
			k := float64(w.Episodes)
			n += k
			r += k * w.EpisodeReturn
			sd += k * w.MeanSlowdown
		}
		ret[i], slow[i] = math.NaN(), math.NaN()
		if n > 0 {
			ret[i], slow[i] = r/n, sd/n
		}
	}
	over := fmt.Sprintf("training episodes, mean over the last %d updates", window)
	panels := []report.CurvePanel{{Title: "episodic return (" + over + ")", YLabel: "return", Y: ret}}
	if slowdown {
		panels = append(panels, report.CurvePanel{Title: "mean slowdown (" + over + ")", YLabel: "slowdown", Y: slow, Refs: refs})
	}
	return report.SaveLearningCurve(path, "tegrl train", "decisions learned from", x, panels)
}

func printTrainSummary(w io.Writer, s *trainSummary, dir string) error {
	if dir == "" {
		return printEval(w, s)
	}
	if len(s.Saturation) > 0 || s.Config.Env.Saturate != nil {
		fmt.Fprintf(w, "trained %d updates, %d decisions in %.0f s; policy in %s\n", s.Updates, s.Steps, s.WallS, filepath.Join(dir, "policy.safetensors"))
		fmt.Fprintf(w, "last 10 updates: %d training episodes, return %.1f GPUs allocated; final update: approx KL %.4f, clip %.3f, explained variance %.3f, entropy %.3f\n",
			s.Recent.Episodes, s.Recent.EpisodeReturn, s.Final.ApproxKL, s.Final.ClipFrac, s.Final.ExplainedVar, s.Final.Entropy)
		if len(s.Saturation) == 0 {
			return nil
		}
		fmt.Fprintf(w, "saturation experiment, held-out seeds %s:\n", report.FormatSeeds(s.EvalSeeds))
		return report.WriteSaturationText(w, s.Saturation)
	}
	fmt.Fprintf(w, "trained %d updates, %d decisions in %.0f s; policy in %s\n", s.Updates, s.Steps, s.WallS, filepath.Join(dir, "policy.safetensors"))
	fmt.Fprintf(w, "last 10 updates: %d training episodes, return %.2f, slowdown %.3f; final update: approx KL %.4f, clip %.3f, explained variance %.3f, entropy %.3f, converged %v\n",
		s.Recent.Episodes, s.Recent.EpisodeReturn, s.Recent.MeanSlowdown, s.Final.ApproxKL, s.Final.ClipFrac, s.Final.ExplainedVar, s.Final.Entropy, s.Converged)
	return printEval(w, s)
}

// printEval prints the held-out comparison.
func printEval(w io.Writer, s *trainSummary) error {
	if len(s.Eval) == 0 {
		return nil
	}
	fmt.Fprintf(w, "held-out seeds %s:\n", report.FormatSeeds(s.EvalSeeds))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scheduler\tslowdown\tJCT s\tSLA viol %\tsafety viol\tTEG reward\tpolicy - it (slowdown, 95% CI)\tchange\t")
	for _, r := range s.Eval {
		vs, rel := "", ""
		if p, ok := s.Paired[r.Scheduler]; ok {
			vs, rel = fmt.Sprintf("%+.3f [%+.3f, %+.3f]", p.DiffMean, p.CILow, p.CIHigh), fmt.Sprintf("%+.1f%%", p.RelChangePct)
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%.0f\t%.2f\t%d\t%.4f\t%s\t%s\t\n", r.Scheduler, r.MeanSlowdown, r.MeanJCTS, 100*r.SLAViolationRate, r.SafetyViolations, r.RewardMean, vs, rel)
	}
	return tw.Flush()
}

// evalSaturation runs the FGD saturation protocol on seeds for the policy,
// fgd and bestfit.
func evalSaturation(ctx context.Context, payload []byte, spec *rl.SaturateSpec, seeds []uint64) ([]report.SaturationSummary, error) {
	sw, err := spec.Load()
	if err != nil {
		return nil, err
	}
	if _, _, err := rl.LoadPolicy(payload); err != nil {
		return nil, err
	}
	runs, err := report.RunSaturation(ctx, report.SaturationConfig{Cluster: sw.Cluster, Trace: sw.Trace, Schedulers: []string{"policy", "fgd", "bestfit"},
		Seeds: seeds, Tune: spec.Tune, New: func(name string) (env.Scheduler, error) {
			if name != "policy" {
				return env.NewScheduler(name)
			}
			p, _, err := rl.LoadPolicy(payload)
			if err != nil {
				return nil, err
			}
			return rl.NewScheduler(p, rl.SchedulerConfig{Name: "policy"}), nil
		}})
	if err != nil {
		return nil, err
	}
	sums := make([]report.SaturationSummary, len(runs))
	for i, rs := range runs {
		if sums[i], err = report.Summarize(rs); err != nil {
			return nil, err
		}
	}
	return sums, nil
}

// loadRecordings re-creates the decisions of the recordings in dirs
// (comma-separated folders of tegrl dataset record) for pol, each re-run
// with its recorded scheduler (rl.LoadRecording) and, when ref names a
// built-in scheduler, with rewards relative to a fresh one of it; loaded,
// if not nil, is told of each folder done.
func loadRecordings(dirs, ref string, pol *rl.Policy, gamma, scale float64, data *rl.OfflineData, loaded func(dir, spec string)) error {
	for _, dir := range strings.Split(dirs, ",") {
		dir = strings.TrimSpace(dir)
		t, err := replay.Open(dir)
		if err != nil {
			return err
		}
		spec := t.Config.SchedulerSpec
		if spec == "" {
			spec = t.Config.Scheduler
		}
		mk, err := rl.SchedulerFactory(spec)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		var refSched env.Scheduler
		if ref != "" {
			if refSched, err = env.NewScheduler(ref); err != nil {
				return fmt.Errorf("%s: reference: %w", dir, err)
			}
		}
		if err := rl.LoadRecording(t, mk(), refSched, pol, gamma, scale, data); err != nil {
			return err
		}
		if loaded != nil {
			loaded(dir, spec)
		}
	}
	return nil
}

// writeJSONFile writes v as indented JSON to path (a run's summary.json)
// and returns the bytes.
func writeJSONFile(path string, v any) ([]byte, error) {
	js, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return js, os.WriteFile(path, append(js, '\n'), 0o644)
}
