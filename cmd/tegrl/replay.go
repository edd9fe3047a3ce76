package main

import (
	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/cmd/internal/flagtag"
	"github.com/tegrl/tegrl/replay"
	"github.com/tegrl/tegrl/rl"
)

func init() { addCommand(newReplayCmd) }

// replayFlags are the flags of `tegrl replay` (replay.Command). trace,
// scheduler, diff and jsonOut are their copies that runReplayGPU reads.
type replayFlags struct {
	replay.Command
}

func newReplayCmd(a *app) *cobra.Command {
	f := &replayFlags{}
	cmd := &cobra.Command{
		Use:     "replay",
		Short:   "Re-run a recorded run with any scheduler; check that it reproduces, or diff two schedulers' decisions",
		Long:    helpText("replay"),
		Example: exampleText("replay"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if replay.IsGPURecording(f.Trace) {
				return runReplayGPU(a, f)
			}
			f.NewScheduler, f.Logger, f.Bar = rl.SchedulerFactory, a.log, a.stderr
			return f.Run(cmd.Context(), a.stdout)
		},
	}
	flagtag.Bind(cmd.Flags(), &f.Command)
	cmd.MarkFlagRequired("trace")
	return cmd
}
