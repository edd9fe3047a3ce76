package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tegrl/tegrl/cmd/internal/flagtag"
	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/serve"
	"github.com/tegrl/tegrl/serve/kube"
)

func init() { addCommand(newServeCmd) }

func newServeCmd(a *app) *cobra.Command {
	f := &serve.Options{}
	var kf kube.Flags
	cmd := &cobra.Command{
		Use:     "serve",
		Short:   "Serve scheduling decisions over HTTP: JSON API, Kubernetes scheduler extender, hot-loaded policies, A/B routing",
		Long:    helpText("serve"),
		Example: exampleText("serve"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := kf.Check(cmd.Flags().Changed("cluster"), &f.Cluster); err != nil {
				return err
			}
			f.Logger, f.Attach = a.log, kf.Attach(a.log)
			return serve.Run(cmd.Context(), *f, func(url string) { fmt.Fprintln(a.stdout, url) })
		},
	}
	addServeFlags(cmd.Flags(), f)
	addKubeFlags(cmd.Flags(), &kf)
	return cmd
}

// addServeFlags declares the flags of `tegrl serve` on fl.
func addServeFlags(fl *pflag.FlagSet, f *serve.Options) {
	flagtag.Bind(fl, f)
	fl.StringVar(&f.Cluster, "cluster", "synthetic", "initial "+env.ClusterSpecHelp+"; or none (defined by the first POST /v1/state)")
	fl.Float64Var(&f.Tick, "tick", env.DefaultSimConfig.Tick, "seconds per model tick")
	fl.StringVar(&f.Clock, "clock", serve.ClockRequest, "model time: request (state updates carry time_s) or wall (one tick every --tick seconds)")
	fl.Var(&allocPolicyFlag{m: &f.AllocationPolicies}, "allocation-policy",
		"serve the learned allocation policy FILE (a scored or tiered policy JSON file) as NAME through POST /v1/allocate (repeatable)")
}

// allocPolicyFlag collects --allocation-policy NAME=FILE values; serve.New
// checks the names and the files.
type allocPolicyFlag struct {
	m    *map[string]string
	vals []string
}

func (f *allocPolicyFlag) String() string { return strings.Join(f.vals, ",") }
func (f *allocPolicyFlag) Type() string   { return "NAME=FILE" }

func (f *allocPolicyFlag) Set(v string) error {
	name, path, ok := strings.Cut(v, "=")
	if !ok || name == "" || path == "" {
		return fmt.Errorf("%q: want NAME=FILE", v)
	}
	if _, dup := (*f.m)[name]; dup {
		return fmt.Errorf("%q: %s given twice", v, name)
	}
	if *f.m == nil {
		*f.m = map[string]string{}
	}
	(*f.m)[name] = path
	f.vals = append(f.vals, v)
	return nil
}

// addKubeFlags declares the flags of `tegrl serve` that connect it to a
// Kubernetes API server.
func addKubeFlags(fl *pflag.FlagSet, f *kube.Flags) {
	fl.StringVar(&f.Kubeconfig, "kubeconfig", "", `keep the model equal to a Kubernetes cluster (informers on nodes and pods) and bind pods for the extender's bind verb: a kubeconfig path, or "`+kube.InCluster+`" for the pod's service account; the cluster's nodes define the machines (--cluster must stay unset)`)
	fl.DurationVar(&f.Resync, "kube-resync", kube.DefaultResync, "with --kubeconfig: period of the full re-sync of the model from the informers' caches")
	fl.Float32Var(&f.QPS, "kube-qps", kube.DefaultQPS, "with --kubeconfig: requests per second to the API server (each bind is one)")
	fl.IntVar(&f.Burst, "kube-burst", kube.DefaultBurst, "with --kubeconfig: request burst above --kube-qps")
}
