package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tegrl/tegrl/report"
	"github.com/tegrl/tegrl/rl"
)

func init() { addCommand(newTrainCmd) }

func newTrainCmd(a *app) *cobra.Command {
	f := &rl.TrainOptions{OfflineConfig: rl.DefaultOfflineConfig()}
	cmd := &cobra.Command{
		Use:     "train",
		Short:   "Train a placement + damping policy with PPO and IMPALA-style actors over NATS",
		Long:    helpText("train"),
		Example: exampleText("train"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.Set, f.Command, f.Logger, f.Bar = cmd.Flags().Changed, report.CommandLine(a.argv), a.log, a.stderr
			return f.Run(cmd.Context(), a.stdout)
		},
	}
	addTrainFlags(cmd.Flags(), f)
	return cmd
}

// addTrainFlags declares the flags of `tegrl train` on fl.
func addTrainFlags(fl *pflag.FlagSet, f *rl.TrainOptions) {
	off := &f.OfflineConfig
	fl.StringVar(&f.Preset, "preset", "small", "training preset: small or saturate")
	fl.StringVar(&f.Out, "out", "", "output directory (required)")
	fl.Uint64Var(&f.Seed, "seed", 1, "seed of the network initialisation, the actors' episodes and the minibatches")
	fl.IntVar(&f.Actors, "actors", 1, "in-process actors (0: only remote tegrl actor processes); on 2 cores one actor keeps the learner busy")
	fl.IntVar(&f.Steps, "steps", 0, "decisions to learn from (default: the preset's)")
	fl.IntVar(&f.Batch, "batch", 0, "decisions per PPO update (default: the preset's)")
	fl.IntVar(&f.SegmentLen, "segment", rl.DefaultSegmentLen, "steps per trajectory segment")
	fl.BoolVar(&f.Sync, "sync", true, "in-process actors wait for every update (on-policy lockstep; with --actors 1 the run is deterministic); --sync=false for IMPALA's asynchronous actors")
	fl.Uint64Var(&f.MaxLag, "max-lag", rl.DefaultMaxLag, "drop segments more than this many policy versions old")
	fl.StringVar(&f.Transport, "transport", "nats", "nats, or chan (in-process channels, for comparison)")
	fl.StringVar(&f.NATSURL, "nats", "", "NATS server URL (default: an embedded server on a random loopback port)")
	fl.StringVar(&f.Token, "token", "", "NATS token (also for the embedded server)")
	fl.StringVar(&f.RunID, "run", "train", "run id: scopes the NATS subjects (letters, digits, - and _)")
	fl.IntVar(&f.Machines, "machines", 0, "machines of the synthetic cluster (default: the preset's)")
	fl.Float64Var(&f.Load, "load", 0, "offered load (default: the preset's)")
	fl.Float64Var(&f.Episode, "episode", 0, "simulated seconds per episode (default: the preset's)")
	fl.StringVar(&f.EvalSeeds, "eval-seeds", rl.EvalSeeds, "held-out seeds of the final evaluation (\"\" skips it; --preset saturate: "+rl.SaturateEvalSeeds+" unless given)")
	fl.StringVar(&f.Nodes, "nodes", defaultGPUNodes, "--preset saturate: Alibaba GPU trace node table: alibaba-gpu (bundled nodes.csv) or alibaba-gpu:FILE")
	fl.StringVar(&f.Pods, "pods", defaultGPUPods, "--preset saturate: Alibaba GPU trace pod table: alibaba-gpu (bundled pods.csv) or alibaba-gpu:FILE")
	fl.StringVar(&f.EvalRefs, "eval-ref", "langevin,kube,bestfit,fgd", "schedulers the policy is compared with")
	fl.Float64Var(&f.LR, "lr", 0, "Adam learning rate (default: the preset's)")
	fl.Float64Var(&f.EntCoef, "ent-coef", rl.DefaultEntCoef, "weight of the placement entropy bonus")
	fl.Float64Var(&f.Gamma, "gamma", 0, "discount per decision (default: the preset's)")
	fl.Float64Var(&f.Shaping, "shaping", 0, "potential-based reward shaping from the reward baseline's load: horizon in simulated seconds (0: off; docs/rl.md)")
	fl.IntVar(&f.Candidates, "candidates", 0, "candidate machines per decision (default: the preset's)")
	fl.IntVar(&f.Hidden, "hidden", 0, "hidden width (default: the preset's)")
	fl.StringVar(&f.Encoder, "encoder", "", "candidate encoder: mlp, or gnn (temporal and graph layers on the decision's candidate graph; docs/rl.md) (default: the preset's)")
	fl.BoolVar(&f.Replicas, "replicas", false, "let the policy change services' replica counts (off: deltas are 0; see docs/rl.md)")
	fl.StringVar(&f.Reward, "reward", "", "reward: slowdown or teg (default: the preset's)")
	fl.StringVar(&f.Baseline, "reward-baseline", "", "scheduler run alongside whose accrual each reward is relative to (\"\": none; default: the preset's)")
	fl.IntVar(&f.CheckpointEvery, "checkpoint-every", rl.DefaultCheckpointEvery, "write DIR/checkpoint every this many updates and at the end (0: never)")
	fl.StringVar(&f.Resume, "resume", "", "continue the run whose checkpoint directory this is (same flags; with --actors 1 --sync the numbers are those of an uninterrupted run)")
	fl.StringVar(&f.Offline, "offline", "", "learn offline from recordings of tegrl dataset record (comma-separated folders) instead of online")
	fl.StringVar(&off.Method, "offline-method", "bc", "offline method: bc (behaviour cloning) or awr (advantage-weighted regression)")
	fl.IntVar(&off.Epochs, "offline-epochs", off.Epochs, "passes over the offline data")
	fl.StringVar(&f.OfflineRef, "offline-ref", "", "built-in scheduler run beside each recording: rewards become relative to its accrual (\"\": raw rewards)")
	fl.Float64Var(&off.Beta, "awr-beta", off.Beta, "AWR temperature β on normalised advantages (smaller: greedier)")
	fl.Float64Var(&off.Lambda, "awr-lambda", off.Lambda, "AWR's TD(λ) for advantages and value targets: 1 uses the Monte Carlo returns, less bootstraps from the value function")
	fl.StringVar(&f.Init, "init", "", "start from this policy (a policy file or train output folder of the same shape), e.g. an offline one")
	fl.BoolVar(&f.JSON, "json", false, "print the summary as JSON")
	fl.StringVar(&f.Credentials, "credentials", "", "file of the learner's NATS user credentials (NAME:PASSWORD) for --nats (default: the file $TEGRL_NATS_CREDENTIALS names)")
	fl.BoolVar(&f.KeyFromSeed, "sign-key-from-seed", false, "derive the signing key from --seed instead of crypto/rand (reproducible signatures; anyone who knows the seed can sign)")
}
