package rl

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/replay"
	"github.com/tegrl/tegrl/report"
	"github.com/tegrl/tegrl/rl/transport"
)

// TrainRun is a whole training run of tegrl train: Train, then the files
// it leaves in Out and the evaluation on held-out seeds.
type TrainRun struct {
	Config TrainConfig
	Preset string // the preset's name, recorded in the policy's metadata
	// Out is the existing directory that receives policy.safetensors
	// (signed with Config.SigningKey), train_log.csv, learning_curve.png
	// and summary.json.
	Out     string
	Command string // the command line, for summary.json
	// EvalSeeds are the held-out seeds of the final evaluation (none:
	// skipped). A cluster policy is compared with EvalRefs (built-in
	// scheduler names), a saturation policy with fgd and bestfit.
	EvalSeeds []uint64
	EvalRefs  []string
}

// TrainSummary is summary.json of a training run.
type TrainSummary struct {
	Command   string                           `json:"command"`
	Preset    string                           `json:"preset"`
	Config    TrainConfig                      `json:"config"`
	Updates   int                              `json:"updates"`
	Steps     uint64                           `json:"steps"`
	WallS     float64                          `json:"wall_s"`
	Final     UpdateLog                        `json:"final_update"`
	Recent    RecentEpisodes                   `json:"last_10_updates"`
	Converged bool                             `json:"converged"`
	EvalSeeds []uint64                         `json:"eval_seeds,omitempty"`
	Eval      []report.EvalRow                 `json:"eval,omitempty"`
	Paired    map[string]report.PairedSlowdown `json:"paired_vs_policy,omitempty"`
	// Saturation is the saturate preset's evaluation: the FGD protocol on
	// the held-out seeds for the policy, fgd and bestfit.
	Saturation []report.SaturationSummary `json:"saturation,omitempty"`
}

// RecentEpisodes averages the training episodes of the last updates
// (SummaryUpdates), weighted by episode.
type RecentEpisodes struct {
	Episodes      int     `json:"episodes"`
	EpisodeReturn float64 `json:"episodic_return"`
	MeanSlowdown  float64 `json:"mean_slowdown"`
	Reward        float64 `json:"reward_mean"`
}

// recentEpisodes averages the episodes of the last n updates of logs.
func recentEpisodes(logs []UpdateLog, n int) RecentEpisodes {
	var r RecentEpisodes
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

// RunTrain trains (Train), writes the run's files into r.Out, evaluates
// the policy on r.EvalSeeds and returns the summary it wrote.
func RunTrain(ctx context.Context, r TrainRun) (*TrainSummary, error) {
	cfg := r.Config
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	start := time.Now()
	log.Info("train", "preset", r.Preset, "machines", cfg.Env.Machines, "load", cfg.Env.Load, "episode_s", cfg.Env.Episode,
		"steps", cfg.TotalSteps, "batch", cfg.BatchSize, "actors", cfg.Actors, "transport", cfg.Transport, "sync", cfg.Sync)
	res, err := Train(ctx, cfg)
	if err != nil {
		return nil, err
	}
	wall := time.Since(start).Seconds()
	last := res.Log[len(res.Log)-1]
	meta := map[string]string{"tegrl.run": cfg.RunID, "tegrl.version": strconv.FormatUint(res.Learner.Version(), 10),
		"tegrl.steps": strconv.FormatUint(last.Steps, 10), "tegrl.preset": r.Preset}
	// The training scale, where the preset does not say it (so that the
	// presets' files stay byte-identical): FitOf reads it.
	if cfg.Env.Saturate == nil && cfg.Env.Machines > 0 && (r.Preset != "small" || cfg.Env.Machines != SmallMachines) {
		meta[MetaMachines] = strconv.Itoa(cfg.Env.Machines)
	}
	payload, err := res.Learner.Pol.EncodeParams(meta)
	if err != nil {
		return nil, err
	}
	if err := transport.WriteSignedPolicy(filepath.Join(r.Out, "policy.safetensors"), payload, cfg.SigningKey); err != nil {
		return nil, err
	}
	if err := report.WriteStructCSV(filepath.Join(r.Out, "train_log.csv"), res.Log); err != nil {
		return nil, err
	}
	sum := &TrainSummary{Command: r.Command, Preset: r.Preset, Config: cfg, Updates: len(res.Log),
		Steps: last.Steps, WallS: wall, Final: last, Converged: last.Converged, Recent: recentEpisodes(res.Log, SummaryUpdates)}
	var refs []report.CurveRef
	if len(r.EvalSeeds) > 0 {
		sum.EvalSeeds = r.EvalSeeds
		if cfg.Env.Saturate != nil {
			if sum.Saturation, err = EvaluateSaturation(ctx, payload, cfg.Env.Saturate, r.EvalSeeds); err != nil {
				return nil, err
			}
		} else {
			if sum.Eval, sum.Paired, err = EvaluatePolicy(ctx, payload, cfg.Env.Config().Source, cfg.Env.Episode, r.EvalSeeds, r.EvalRefs); err != nil {
				return nil, err
			}
			for _, row := range sum.Eval[1:] {
				refs = append(refs, report.CurveRef{Label: row.Scheduler + " (held-out)", Y: row.MeanSlowdown})
			}
		}
	}
	points := make([]report.TrainingPoint, len(res.Log))
	for i, l := range res.Log {
		points[i] = report.TrainingPoint{Steps: float64(l.Steps), Episodes: l.Episodes, EpisodeReturn: l.EpisodeReturn, MeanSlowdown: l.MeanSlowdown}
	}
	if err := report.SaveTrainingCurve(filepath.Join(r.Out, "learning_curve.png"), points, CurveWindow, refs, cfg.Env.Saturate == nil); err != nil {
		return nil, err
	}
	if _, err := report.WriteJSONFile(filepath.Join(r.Out, "summary.json"), sum); err != nil {
		return nil, err
	}
	return sum, nil
}

// EvaluatePolicy runs the policy (safetensors bytes) and the built-in
// schedulers refs on the held-out seeds of src, episodes of episode
// seconds: a row per scheduler, the policy's first, and the policy's
// paired slowdown against each reference.
func EvaluatePolicy(ctx context.Context, payload []byte, src Source, episode float64, seeds []uint64, refs []string) ([]report.EvalRow, map[string]report.PairedSlowdown, error) {
	pe, err := PolicyEntry("policy", payload)
	if err != nil {
		return nil, nil, err
	}
	entries := []EvalEntry{pe}
	for _, name := range refs {
		e, err := BuiltinEntry(name)
		if err != nil {
			return nil, nil, fmt.Errorf("evaluation reference: %w", err)
		}
		entries = append(entries, e)
	}
	runs, err := Evaluate(ctx, src, episode, seeds, entries)
	if err != nil {
		return nil, nil, err
	}
	n := len(seeds)
	metrics := func(k int) []env.Metrics {
		ms := make([]env.Metrics, n)
		for i, r := range runs[k*n : (k+1)*n] {
			ms[i] = r.Metrics
		}
		return ms
	}
	rows := []report.EvalRow{report.EvalRowOf(pe.Name, metrics(0))}
	paired := map[string]report.PairedSlowdown{}
	bs := report.BootstrapConfig{Resamples: EvalResamples, Level: EvalLevel, Seed: EvalBootstrapSeed}
	for k, e := range entries[1:] {
		ms := metrics(k + 1)
		rows = append(rows, report.EvalRowOf(e.Name, ms))
		if paired[e.Name], err = report.PairSlowdown(metrics(0), ms, bs); err != nil {
			return nil, nil, err
		}
	}
	return rows, paired, nil
}

// saturationRefs are the schedulers a saturation policy is evaluated
// against: the two best of the FGD protocol's built-ins.
var saturationRefs = []string{"fgd", "bestfit"}

// EvaluateSaturation runs the FGD saturation protocol of spec on seeds for
// the policy (safetensors bytes), fgd and bestfit.
func EvaluateSaturation(ctx context.Context, payload []byte, spec *SaturateSpec, seeds []uint64) ([]report.SaturationSummary, error) {
	sw, err := spec.Load()
	if err != nil {
		return nil, err
	}
	if _, _, err := LoadPolicy(payload); err != nil {
		return nil, err
	}
	runs, err := report.RunSaturation(ctx, report.SaturationConfig{Cluster: sw.Cluster, Trace: sw.Trace, Schedulers: append([]string{"policy"}, saturationRefs...),
		Seeds: seeds, Tune: spec.Tune, New: func(name string) (env.Scheduler, error) {
			if name != "policy" {
				return env.NewScheduler(name)
			}
			p, _, err := LoadPolicy(payload)
			if err != nil {
				return nil, err
			}
			return NewScheduler(p, SchedulerConfig{Name: "policy"}), nil
		}})
	if err != nil {
		return nil, err
	}
	return report.SummarizeAll(runs)
}

// OfflineRun is an offline training run of tegrl train --offline: the
// policy learns from recordings, then is evaluated like an online run's.
type OfflineRun struct {
	// Policy is the policy to train (fresh or initialised), of
	// PolicyConfig.
	Policy       *Policy
	PolicyConfig PolicyConfig
	// Recordings are folders of tegrl dataset record; Ref, when set, names
	// the built-in scheduler whose accrual the rewards are relative to
	// (LoadRecordings).
	Recordings []string
	Ref        string
	// Gamma and RewardScale shape the recorded rewards (the value head's
	// targets).
	Gamma, RewardScale float64
	Offline            OfflineConfig
	Preset             string // recorded in the policy's metadata
	// Out is the existing directory that receives policy.safetensors
	// (signed with SigningKey) and summary.json.
	Out        string
	SigningKey ed25519.PrivateKey
	Command    string
	// Env is the environment of the evaluation on EvalSeeds (none:
	// skipped) against EvalRefs (built-in scheduler names).
	Env       EnvSpec
	EvalSeeds []uint64
	EvalRefs  []string
	// Loaded, if set, is told of each recording loaded and the decisions
	// loaded so far.
	Loaded func(dir, scheduler string, decisions int)
}

// OfflineSummary is summary.json of an offline run.
type OfflineSummary struct {
	Command    string                           `json:"command"`
	Recordings []string                         `json:"recordings"`
	Decisions  int                              `json:"decisions"`
	Offline    OfflineConfig                    `json:"offline"`
	Policy     PolicyConfig                     `json:"policy"`
	Log        []OfflineStats                   `json:"log"`
	WallS      float64                          `json:"wall_s"`
	EvalSeeds  []uint64                         `json:"eval_seeds,omitempty"`
	Eval       []report.EvalRow                 `json:"eval,omitempty"`
	Paired     map[string]report.PairedSlowdown `json:"paired_vs_policy,omitempty"`
}

// RunOffline loads the recordings, trains r.Policy on them (TrainOffline),
// writes its files into r.Out, evaluates it and returns the summary it
// wrote.
func RunOffline(ctx context.Context, r OfflineRun) (*OfflineSummary, error) {
	start := time.Now()
	var data OfflineData
	err := LoadRecordings(r.Recordings, r.Ref, r.Policy, r.Gamma, r.RewardScale, &data, func(dir, spec string) {
		if r.Loaded != nil {
			r.Loaded(dir, spec, data.Len())
		}
	})
	if err != nil {
		return nil, err
	}
	log, err := TrainOffline(r.Policy, &data, r.Offline)
	if err != nil {
		return nil, err
	}
	payload, err := r.Policy.EncodeParams(map[string]string{"tegrl.offline": r.Offline.Method, "tegrl.preset": r.Preset})
	if err != nil {
		return nil, err
	}
	if err := transport.WriteSignedPolicy(filepath.Join(r.Out, "policy.safetensors"), payload, r.SigningKey); err != nil {
		return nil, err
	}
	sum := &OfflineSummary{Command: r.Command, Recordings: r.Recordings, Decisions: data.Len(), Offline: r.Offline,
		Policy: r.PolicyConfig, Log: log, WallS: time.Since(start).Seconds()}
	if len(r.EvalSeeds) > 0 {
		sum.EvalSeeds = r.EvalSeeds
		if sum.Eval, sum.Paired, err = EvaluatePolicy(ctx, payload, r.Env.Config().Source, r.Env.Episode, r.EvalSeeds, r.EvalRefs); err != nil {
			return nil, err
		}
	}
	if _, err := report.WriteJSONFile(filepath.Join(r.Out, "summary.json"), sum); err != nil {
		return nil, err
	}
	return sum, nil
}

// LoadRecordings re-creates the decisions of the recordings in dirs
// (folders of tegrl dataset record; spaces around a name are ignored) for
// pol, each re-run with its recorded scheduler (LoadRecording) and, when
// ref names a built-in scheduler, with rewards relative to a fresh one of
// it; loaded, if not nil, is told of each folder done.
func LoadRecordings(dirs []string, ref string, pol *Policy, gamma, scale float64, data *OfflineData, loaded func(dir, spec string)) error {
	for _, dir := range dirs {
		dir = strings.TrimSpace(dir)
		t, err := replay.Open(dir)
		if err != nil {
			return err
		}
		spec := t.Config.SchedulerSpec
		if spec == "" {
			spec = t.Config.Scheduler
		}
		mk, err := SchedulerFactory(spec)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		var refSched env.Scheduler
		if ref != "" {
			if refSched, err = env.NewScheduler(ref); err != nil {
				return fmt.Errorf("%s: reference: %w", dir, err)
			}
		}
		if err := LoadRecording(t, mk(), refSched, pol, gamma, scale, data); err != nil {
			return err
		}
		if loaded != nil {
			loaded(dir, spec)
		}
	}
	return nil
}
