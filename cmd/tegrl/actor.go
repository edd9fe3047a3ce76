package main

import (
	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/cmd/internal/flagtag"
	"github.com/tegrl/tegrl/rl"
)

func init() { addCommand(newActorCmd) }

func newActorCmd(a *app) *cobra.Command {
	var cfg rl.RemoteActorConfig
	var id uint32
	var creds, trust string
	cmd := &cobra.Command{
		Use:     "actor",
		Short:   "Run an IMPALA actor for a tegrl train learner over NATS",
		Long:    helpText("actor"),
		Example: exampleText("actor"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.ID, cfg.Logger = id, a.log
			if err := cfg.ReadFiles(creds, trust); err != nil {
				return err
			}
			return rl.RunRemoteActor(cmd.Context(), cfg)
		},
	}
	fl := cmd.Flags()
	flagtag.Bind(fl, &cfg)
	fl.Uint32Var(&id, "id", 1, "actor id, unique within the run (in-process actors of tegrl train use 1..--actors)")
	fl.StringVar(&creds, "credentials", "", "file of the actor's NATS user credentials (NAME:PASSWORD) (default: the file $TEGRL_NATS_CREDENTIALS names)")
	fl.StringVar(&trust, "trust-key", "", "the learner's public key (its run directory's signing.pub): drop parameters not signed with it (default: the file $TEGRL_TRUST_KEY names)")
	return cmd
}
