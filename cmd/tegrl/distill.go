package main

import (
	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/distill"
	"github.com/tegrl/tegrl/report"
	"github.com/tegrl/tegrl/rl"
)

func init() { addCommand(newDistillCmd) }

func newDistillCmd(a *app) *cobra.Command {
	r := &distill.Command{RunConfig: distill.RunConfig{Env: rl.EnvSpec{Machines: rl.SmallMachines, Load: rl.SmallLoad, Episode: rl.SmallEpisode}}}
	cmd := &cobra.Command{
		Use:     "distill",
		Short:   "Distil a trained policy into a smaller student (KL at T=2 on placement, moment matching on the Beta heads, value)",
		Long:    helpText("distill"),
		Example: exampleText("distill"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r.Command = report.CommandLine(a.argv)
			return r.Run(cmd.Context(), a.stdout)
		},
	}
	fl, def := cmd.Flags(), distill.DefaultConfig(rl.PolicyConfig{})
	fl.StringVar(&r.Teacher, "teacher", "", "teacher policy (a policy file or train output folder)")
	fl.StringVar(&r.Out, "out", "", "output folder")
	fl.IntVar(&r.Hidden, "hidden", def.Student.Hidden, "student width (the teacher's inputs, candidates and heads)")
	fl.IntVar(&r.Decisions, "decisions", rl.DistillDecisions, "teacher decisions to learn from")
	fl.BoolVar(&r.Online, "online", false, "online: the student acts and learns on the states it visits, labelled by the teacher, over NATS")
	fl.IntVar(&r.Rounds, "rounds", rl.DistillRounds, "online rounds (act, label, refit)")
	fl.BoolVar(&r.UseNATS, "online-nats", true, "online: move the student's decisions over NATS (false: in-process channels)")
	fl.StringVar(&r.NATSURL, "nats", "", "online: NATS server URL (default: an embedded server)")
	fl.StringVar(&r.Data, "data", "", "learn from the decisions of recorded runs (tegrl dataset record folders, comma-separated) instead of the teacher's own episodes")
	fl.IntVar(&r.Epochs, "epochs", def.Epochs, "passes over them")
	fl.Uint64Var(&r.Seed, "seed", 1, "seed of the episodes, the student's initialisation and the minibatches")
	fl.IntVar(&r.Env.Machines, "machines", r.Env.Machines, "machines of the synthetic training cluster")
	fl.Float64Var(&r.Env.Load, "load", r.Env.Load, "offered load")
	fl.Float64Var(&r.Env.Episode, "episode", r.Env.Episode, "simulated seconds per episode")
	fl.StringVar(&r.Seeds, "eval-seeds", rl.EvalSeeds, "held-out seeds comparing teacher, student and langevin (\"\" skips)")
	fl.IntVar(&r.LatencyMachines, "latency-machines", 1523, "synthetic cluster size on which whole decisions of teacher and student are timed (0 skips)")
	fl.BoolVar(&r.JSON, "json", false, "print the summary as JSON")
	return cmd
}
