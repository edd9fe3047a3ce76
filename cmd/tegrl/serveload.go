package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/cmd/internal/flagtag"
	"github.com/tegrl/tegrl/serve"
)

func init() { addCommand(newServeLoadCmd) }

func newServeLoadCmd(a *app) *cobra.Command {
	var (
		cfg     = serve.LoadConfig{HotLoadArm: "a"}
		t       serve.LoadTarget
		hotLoad []string
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:     "serve-load",
		Hidden:  true,
		Short:   "Load-test tegrl serve: decisions at a fixed rate while policies are hot-loaded",
		Long:    helpText("serve-load"),
		Example: exampleText("serve-load"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t.Logger = a.log
			rep, err := serve.LoadTest(cmd.Context(), cfg, hotLoad, t)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(a.stdout).Encode(rep)
			}
			fmt.Fprintln(a.stdout, rep)
			if rep.FirstFailure != "" {
				fmt.Fprintln(a.stdout, "first failure:", rep.FirstFailure)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	flagtag.Bind(fl, &cfg)
	flagtag.Bind(fl, &t)
	fl.StringSliceVar(&hotLoad, "hot-load", []string{"docs/policies/small-gnn.safetensors", "docs/policies/student-gnn.safetensors"},
		"policy files uploaded in turn into arm a")
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}
