package rl

import "fmt"

// The hyper-parameters of tegrl's learners, in one place. DefaultConfig,
// DefaultPolicyConfig, DefaultOfflineConfig and the presets below read
// them, as does distill.DefaultConfig; a command-line flag overrides one
// field of a preset and nothing else.

// PPO (DefaultConfig). The values are CleanRL's ppo.py defaults except
// where a comment says why not.
const (
	// DefaultLR is Adam's learning rate without a preset. Both presets
	// learn at PresetLR instead.
	DefaultLR = 3e-4
	// DefaultGamma and DefaultLambda are GAE's discount and λ per decision.
	DefaultGamma  = 0.99
	DefaultLambda = 0.95
	// DefaultClipCoef is PPO's ratio clip.
	DefaultClipCoef = 0.2
	// DefaultEntCoef weighs the placement entropy bonus.
	DefaultEntCoef = 0.01
	// DefaultMaxGradNorm clips the global gradient norm at IMPALA's 40
	// (Espeholt et al., "IMPALA", ICML 2018) rather than CleanRL's 0.5:
	// the cluster's rewards are not normalised.
	DefaultMaxGradNorm = 40
	// DefaultTargetKL stops an update's epochs early once the approximate
	// KL to the behaviour policy passes KLStopFactor × TargetKL.
	DefaultTargetKL = 0.015
	// KLStopFactor is the margin over TargetKL of OpenAI Spinning Up's PPO
	// early stop (kl > 1.5 × target_kl): one minibatch's KL estimate is
	// noisy.
	KLStopFactor = 1.5
)

// Policy network (DefaultPolicyConfig).
const (
	// DefaultCandidates is the machines a placement decision chooses
	// among, sampled from the feasible ones.
	DefaultCandidates = 16
	// DefaultHidden is the width of the candidate encoder and the heads.
	DefaultHidden = 32
	// DefaultDampingMin and DefaultDampingMax bound the damping head's
	// Beta distribution, mapped onto [min, max].
	DefaultDampingMin = 0
	DefaultDampingMax = 2
	// DefaultReplicaZeroBias is the initial logit of "no replica
	// change", so an untrained policy does not churn services.
	DefaultReplicaZeroBias = 4
)

// Offline learning from recordings (DefaultOfflineConfig).
const (
	// OfflineEpochs, OfflineMinibatch and OfflineLR: passes over the
	// data, decisions per minibatch and Adam's learning rate.
	OfflineEpochs    = 10
	OfflineMinibatch = 256
	OfflineLR        = 1e-3
	// OfflineAWRBeta is AWR's temperature on normalised advantages and
	// OfflineAWRMaxWeight caps a decision's weight (Peng et al., 2019).
	OfflineAWRBeta      = 1
	OfflineAWRMaxWeight = 20
	// OfflineVFCoef weighs the value loss.
	OfflineVFCoef = 0.5
)

// Convergence test of UpdateLog.Converged.
const (
	// ConvergeWindow is how many of the latest training episodes the test
	// looks at.
	ConvergeWindow = 50
	// ConvergeRewardStd is the largest standard deviation of their
	// per-episode mean rewards (the per-tick reward lies in [0, 1]) that
	// counts as converged.
	ConvergeRewardStd = 0.08
)

// Rollouts and batches (TrainConfig).
const (
	// DefaultSegmentLen is the steps an actor sends in one trajectory
	// segment: long enough for V-trace's bootstrapping, short enough that
	// a segment is rarely more than a version behind.
	DefaultSegmentLen = 100
	// DefaultBatchSize is the decisions of one PPO update.
	DefaultBatchSize = 2000
	// DefaultMaxLag is tegrl train's --max-lag: a segment more than this
	// many policy versions old is dropped; V-trace corrects the lag of
	// the rest.
	DefaultMaxLag = 8
	// DefaultCheckpointEvery is tegrl train's --checkpoint-every, in
	// updates.
	DefaultCheckpointEvery = 10
)

// Presets of `tegrl train --preset`.
const (
	// PresetLR is both presets' learning rate, above DefaultLR because
	// their budget of PresetSteps decisions is short (docs/rl.md compares
	// --lr 3e-4).
	PresetLR = 1e-3
	// PresetSteps is the decisions both presets learn from.
	PresetSteps = 1_000_000
	// SmallMachines, SmallLoad and SmallEpisode are the small preset's
	// cluster (synthetic), offered load and episode length in simulated
	// seconds.
	SmallMachines = 96
	SmallLoad     = 0.9
	SmallEpisode  = 7200
	// SaturateGamma is the saturate preset's discount: an episode is one
	// seed's whole pod sequence (about 11,000 decisions at seed 42), and a
	// pod placed badly costs GPUs many decisions later.
	SaturateGamma = 0.999
	// SaturateCandidates is the machines FGD scores best that the
	// saturate policy chooses among.
	SaturateCandidates = 8
	// SaturateTune is the FGD protocol's stop: pods arrive until their GPU
	// demand reaches 1.3 × the GPU capacity.
	SaturateTune = 1.3
	// BundledGPUTrace names the Alibaba GPU trace bundled with tegrl (the
	// saturate preset's nodes and pods).
	BundledGPUTrace = "alibaba-gpu"
)

// Evaluation on held-out seeds.
const (
	// EvalResamples is the bootstrap resamples of a paired confidence
	// interval over seeds, as tegrl ab's default (report.DefaultResamples).
	EvalResamples = 10_000
	// EvalLevel is the confidence level of the intervals.
	EvalLevel = 0.95
	// EvalBootstrapSeed seeds the bootstrap's resampling, so that a run's
	// intervals depend on its results alone.
	EvalBootstrapSeed = 1
	// EvalSeeds are the held-out seeds of tegrl train's and tegrl
	// distill's final evaluation: ten seeds apart from the training
	// episodes' 1, 2, ...
	EvalSeeds = "101-110"
	// SaturateEvalSeeds are the saturate preset's held-out seeds, the
	// ten seeds of tegrl saturate's default.
	SaturateEvalSeeds = "42-51"
)

// What a training run reports (TrainSummary and its learning curve).
const (
	// SummaryUpdates is the number of last updates whose training episodes
	// summary.json's last_10_updates averages.
	SummaryUpdates = 10
	// CurveWindow is the number of updates each point of the learning
	// curve averages the training episodes over: single episodes vary
	// with their workload far more than the policy does.
	CurveWindow = 25
)

// Distillation seeds (tegrl distill): the episodes a student learns from
// are drawn from seeds far from the training seeds (1, 2, ...) and the
// held-out evaluation seeds (101-110), so that no episode repeats.
const (
	// DistillSeedStride spreads distillation runs of different --seed
	// values apart (a prime, so that strides never line up with seed
	// ranges).
	DistillSeedStride = 1_000_003
	// DistillTeacherSeeds and DistillStudentSeeds offset the teacher's
	// collection episodes and the online student's final collection.
	DistillTeacherSeeds = 2_000_000
	DistillStudentSeeds = 3_000_000
	// DistillGamma discounts the recorded rewards of offline distillation
	// data (only the value head reads them).
	DistillGamma = DefaultGamma
	// DistillHidden is the student's width (a ReLU MLP: tanh was most of
	// a width-8 network's decision time).
	DistillHidden = 8
	// DistillTemperature is the temperature of the placement KL (scaled
	// by T², Hinton et al., 2015).
	DistillTemperature = 2
	// DistillEpochs, DistillMinibatch and DistillLR: passes over the
	// decisions, decisions per minibatch and Adam's learning rate.
	DistillEpochs    = 20
	DistillMinibatch = 256
	DistillLR        = 3e-3
	// DistillVFCoef weighs the value loss.
	DistillVFCoef = 0.5
	// DistillDecisions is the teacher decisions a student learns from
	// (tegrl distill --decisions), DistillRounds the online rounds of
	// acting, labelling and refitting (--rounds).
	DistillDecisions = 20000
	DistillRounds    = 5
	// DistillOnlineCollect caps the decisions the online student's final
	// collection (its summary's decisions and latencies) runs.
	DistillOnlineCollect = 5000
)

// Presets lists the names Preset knows.
var Presets = []string{"small", "saturate"}

// Preset returns a preset's training configuration: the small preset (a
// 96-machine synthetic cluster at load 0.9, two-hour episodes, the
// slowdown reward relative to langevin on the same seed) or the saturate
// preset (the FGD saturation experiment on the bundled Alibaba GPU trace,
// a decision among the SaturateCandidates machines FGD scores best).
// Both learn from PresetSteps decisions in batches of DefaultBatchSize at
// PresetLR; everything else is DefaultConfig and DefaultPolicyConfig.
func Preset(name string) (TrainConfig, error) {
	ppo := DefaultConfig()
	ppo.LR = PresetLR
	pol := DefaultPolicyConfig()
	cfg := TrainConfig{BatchSize: DefaultBatchSize, TotalSteps: PresetSteps, PPO: ppo, Policy: pol}
	switch name {
	case "small":
		cfg.Env = EnvSpec{Machines: SmallMachines, Load: SmallLoad, Episode: SmallEpisode, Reward: RewardSlowdown, RewardScale: 1, Baseline: "langevin"}
		return cfg, nil
	case "saturate":
		cfg.PPO.Gamma = SaturateGamma
		cfg.Policy.Candidates, cfg.Policy.Features = SaturateCandidates, FeaturesSaturation
		cfg.Env = EnvSpec{RewardScale: 1, Saturate: &SaturateSpec{Nodes: BundledGPUTrace, Pods: BundledGPUTrace, Tune: SaturateTune}}
		return cfg, nil
	}
	return TrainConfig{}, fmt.Errorf("unknown preset %q (known: small, saturate, gavel)", name)
}
