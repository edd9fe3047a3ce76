package main

import (
	"github.com/spf13/pflag"

	"github.com/tegrl/tegrl/serve/kube"
)

// addKubeFlags declares the flags of `tegrl serve` that connect it to a
// Kubernetes API server.
func addKubeFlags(fl *pflag.FlagSet, f *kube.Flags) {
	fl.StringVar(&f.Kubeconfig, "kubeconfig", "", `keep the model equal to a Kubernetes cluster (informers on nodes and pods) and bind pods for the extender's bind verb: a kubeconfig path, or "`+kube.InCluster+`" for the pod's service account; the cluster's nodes define the machines (--cluster must stay unset)`)
	fl.DurationVar(&f.Resync, "kube-resync", kube.DefaultResync, "with --kubeconfig: period of the full re-sync of the model from the informers' caches")
	fl.Float32Var(&f.QPS, "kube-qps", kube.DefaultQPS, "with --kubeconfig: requests per second to the API server (each bind is one)")
	fl.IntVar(&f.Burst, "kube-burst", kube.DefaultBurst, "with --kubeconfig: request burst above --kube-qps")
}
