package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/rl"
)

func init() { addCommand(newActorCmd) }

func newActorCmd(a *app) *cobra.Command {
	var cfg rl.RemoteActorConfig
	var id uint32
	var creds, trust string
	cmd := &cobra.Command{
		Use:   "actor",
		Short: "Run an IMPALA actor for a tegrl train learner over NATS",
		Long: `actor connects to the NATS server of a training run, waits for the learner's
parameters (which also carry the environment and the policy's shape), then
runs episodes and publishes trajectory segments, switching to newer
parameters between segments. It stops on SIGINT/SIGTERM, when the learner
ends the run (its signed end message: with --trust-key, only one signed
with the learner's key counts), or when the learner has broadcast nothing
new for --idle-timeout (a learner that died).`,
		Example: `  tegrl broker --listen 127.0.0.1:4222 --token s3cret &
  tegrl train --preset small --nats nats://127.0.0.1:4222 --token s3cret --actors 0 --run r1 --out runs/r1 &
  tegrl actor --nats nats://127.0.0.1:4222 --token s3cret --run r1 --id 1 &
  tegrl actor --nats nats://127.0.0.1:4222 --token s3cret --run r1 --id 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.ID, cfg.Logger = id, a.log
			if err := cfg.ReadFiles(creds, trust); err != nil {
				return err
			}
			return rl.RunRemoteActor(cmd.Context(), cfg)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfg.URL, "nats", "nats://127.0.0.1:4222", "NATS server URL")
	fl.StringVar(&cfg.Token, "token", "", "NATS token")
	fl.StringVar(&cfg.RunID, "run", "train", "run id of the learner (tegrl train --run)")
	fl.Uint32Var(&id, "id", 1, "actor id, unique within the run (in-process actors of tegrl train use 1..--actors)")
	fl.DurationVar(&cfg.IdleTimeout, "idle-timeout", 5*time.Minute, "stop when the learner broadcast nothing new for this long (it died without ending the run)")
	fl.StringVar(&creds, "credentials", "", "file of the actor's NATS user credentials (NAME:PASSWORD) (default: the file $TEGRL_NATS_CREDENTIALS names)")
	fl.StringVar(&trust, "trust-key", "", "the learner's public key (its run directory's signing.pub): drop parameters not signed with it (default: the file $TEGRL_TRUST_KEY names)")
	return cmd
}
