package main

import (
	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/cmd/internal/flagtag"
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
	flagtag.Bind(fl, r)
	fl.IntVar(&r.Hidden, "hidden", def.Student.Hidden, "student width (the teacher's inputs, candidates and heads)")
	fl.IntVar(&r.Decisions, "decisions", rl.DistillDecisions, "teacher decisions to learn from")
	fl.IntVar(&r.Rounds, "rounds", rl.DistillRounds, "online rounds (act, label, refit)")
	fl.IntVar(&r.Epochs, "epochs", def.Epochs, "passes over them")
	fl.IntVar(&r.Env.Machines, "machines", r.Env.Machines, "machines of the synthetic training cluster")
	fl.Float64Var(&r.Env.Load, "load", r.Env.Load, "offered load")
	fl.Float64Var(&r.Env.Episode, "episode", r.Env.Episode, "simulated seconds per episode")
	fl.StringVar(&r.Seeds, "eval-seeds", rl.EvalSeeds, "held-out seeds comparing teacher, student and langevin (\"\" skips)")
	return cmd
}
