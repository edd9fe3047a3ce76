package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tegrl/tegrl/serve"
	"github.com/tegrl/tegrl/serve/kube"
)

// kubeFlags are the flags of `tegrl serve` that connect it to a
// Kubernetes API server.
type kubeFlags struct {
	kubeconfig string
	resync     time.Duration
	qps        float32
	burst      int
}

func addKubeFlags(fl *pflag.FlagSet, f *kubeFlags) {
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", `keep the model equal to a Kubernetes cluster (informers on nodes and pods) and bind pods for the extender's bind verb: a kubeconfig path, or "`+kube.InCluster+`" for the pod's service account; the cluster's nodes define the machines (--cluster must stay unset)`)
	fl.DurationVar(&f.resync, "kube-resync", kube.DefaultResync, "with --kubeconfig: period of the full re-sync of the model from the informers' caches")
	fl.Float32Var(&f.qps, "kube-qps", kube.DefaultQPS, "with --kubeconfig: requests per second to the API server (each bind is one)")
	fl.IntVar(&f.burst, "kube-burst", kube.DefaultBurst, "with --kubeconfig: request burst above --kube-qps")
}

// kubeCluster checks the flags of --kubeconfig mode: the cluster comes
// from the API server, so --cluster becomes none.
func kubeCluster(cmd *cobra.Command, f *kubeFlags, cluster *string) error {
	if f.kubeconfig == "" {
		return nil
	}
	if cmd.Flags().Changed("cluster") && *cluster != "none" {
		return fmt.Errorf("--cluster %s with --kubeconfig: the cluster's nodes define the machines", *cluster)
	}
	if !(f.resync > 0) {
		return fmt.Errorf("--kube-resync %v: want > 0", f.resync)
	}
	if !(f.qps > 0) || f.burst < 1 {
		return fmt.Errorf("--kube-qps %v --kube-burst %d: want > 0 and >= 1", f.qps, f.burst)
	}
	*cluster = "none"
	return nil
}

// kubeAttach is serve.Options.Attach of --kubeconfig mode (none without).
func kubeAttach(f *kubeFlags, a *app) func(context.Context, *serve.Service) (func(), error) {
	if f.kubeconfig == "" {
		return nil
	}
	return kube.Attach(f.kubeconfig, kube.Options{Resync: f.resync, Logger: a.log, QPS: f.qps, Burst: f.burst})
}
