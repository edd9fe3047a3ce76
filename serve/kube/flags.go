package kube

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/tegrl/tegrl/serve"
)

// Flags connect tegrl serve to a Kubernetes API server: with a
// kubeconfig the cluster's nodes define the model's machines.
type Flags struct {
	Kubeconfig string // a kubeconfig path or InCluster ("": no API server)
	Resync     time.Duration
	QPS        float32
	Burst      int
}

// Check checks f when it names a kubeconfig and then sets *cluster, the
// service's initial cluster spec, to "none": the nodes come from the API
// server. clusterSet says whether the spec was given; only "none" may be.
func (f Flags) Check(clusterSet bool, cluster *string) error {
	if f.Kubeconfig == "" {
		return nil
	}
	if clusterSet && *cluster != "none" {
		return fmt.Errorf("--cluster %s with --kubeconfig: the cluster's nodes define the machines", *cluster)
	}
	if !(f.Resync > 0) {
		return fmt.Errorf("--kube-resync %v: want > 0", f.Resync)
	}
	if !(f.QPS > 0) || f.Burst < 1 {
		return fmt.Errorf("--kube-qps %v --kube-burst %d: want > 0 and >= 1", f.QPS, f.Burst)
	}
	*cluster = "none"
	return nil
}

// Attach is serve.Options.Attach for f (nil without a kubeconfig).
func (f Flags) Attach(log *slog.Logger) func(context.Context, *serve.Service) (func(), error) {
	if f.Kubeconfig == "" {
		return nil
	}
	return Attach(f.Kubeconfig, Options{Resync: f.Resync, Logger: log, QPS: f.QPS, Burst: f.Burst})
}
