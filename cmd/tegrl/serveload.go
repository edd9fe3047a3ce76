package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

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
	fl.StringVar(&cfg.URL, "url", "", "base URL of the service to load (empty: start one in this process)")
	fl.IntVar(&t.Machines, "machines", 1000, "machines of the in-process service's synthetic cluster")
	fl.StringVar(&t.Scheduler, "scheduler", "docs/policies/student-gnn.safetensors", "the in-process service's scheduler")
	fl.Float64Var(&cfg.Rate, "rate", 2000, "decisions per second")
	fl.DurationVar(&cfg.Duration, "duration", 20*time.Second, "how long to send decisions")
	fl.IntVar(&cfg.Clients, "clients", 8, "concurrent connections")
	fl.DurationVar(&cfg.HotLoadEvery, "hot-load-every", 75*time.Millisecond, "interval between policy uploads (0: none)")
	fl.StringSliceVar(&hotLoad, "hot-load", []string{"docs/policies/small-gnn.safetensors", "docs/policies/student-gnn.safetensors"},
		"policy files uploaded in turn into arm a")
	fl.Float64Var(&t.Fill, "fill", 0.6, "share of the in-process cluster's CPU requested by running jobs")
	fl.Uint64Var(&t.Seed, "seed", 1, "seed of the in-process cluster and its jobs")
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}
