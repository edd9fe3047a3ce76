package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/rl/transport"
)

func init() { addCommand(newBrokerCmd) }

func newBrokerCmd(a *app) *cobra.Command {
	f := transport.BrokerConfig{}
	cmd := &cobra.Command{
		Use:     "broker",
		Short:   "Run a stand-alone NATS server (with JetStream) for distributed training",
		Long:    helpText("broker"),
		Example: exampleText("broker"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.Logger = a.log
			return transport.RunBroker(cmd.Context(), f, func(url string) { fmt.Fprintln(a.stdout, url) })
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Listen, "listen", "127.0.0.1:4222", "host:port to listen on (port 0: a random free port)")
	fl.StringVar(&f.Token, "token", "", "token every client must present (empty: no authentication)")
	fl.StringVar(&f.UsersFile, "users", "", "file of NATS users, one NAME:PASSWORD:ROLE[:RUN] a line (ROLE learner or actor; actors may not publish parameters), instead of --token")
	fl.StringVar(&f.Store, "store", "", "JetStream directory (empty: a temporary directory, removed on exit)")
	fl.IntVar(&f.MaxPayload, "max-payload", 1<<20, "largest message in bytes (at most 64 MiB); larger parameter sets go through the object store")
	return cmd
}
