package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/cmd/internal/flagtag"
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
	flagtag.Bind(fl, &f)
	return cmd
}
