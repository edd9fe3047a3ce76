package env

import (
	"fmt"
	"strings"
)

// ClusterSpec names where a cluster comes from, as the CLI writes it:
// "synthetic", "alibaba-gpu:PATH" (nodes.csv of the 2023 GPU trace) or
// "alibaba-2018:PATH" (machine_meta.csv of the 2018 trace).
type ClusterSpec struct {
	Source   string // synthetic, alibaba-gpu, alibaba-2018
	Path     string
	Machines int    // synthetic only
	Seed     uint64 // synthetic only
}

// ParseClusterSpec parses "synthetic" or "SOURCE:PATH".
func ParseClusterSpec(s string) (ClusterSpec, error) {
	if s == "synthetic" || s == "" {
		return ClusterSpec{Source: "synthetic"}, nil
	}
	src, path, ok := strings.Cut(s, ":")
	if !ok || path == "" {
		return ClusterSpec{}, fmt.Errorf("cluster %q: want synthetic, alibaba-gpu:PATH or alibaba-2018:PATH", s)
	}
	switch src {
	case "alibaba-gpu", "alibaba-2018":
		return ClusterSpec{Source: src, Path: path}, nil
	}
	return ClusterSpec{}, fmt.Errorf("cluster %q: unknown source %q (want synthetic, alibaba-gpu or alibaba-2018)", s, src)
}

// Load builds the cluster.
func (cs ClusterSpec) Load() (*Cluster, error) {
	switch cs.Source {
	case "synthetic":
		return NewSyntheticCluster(cs.Machines, cs.Seed)
	case "alibaba-gpu":
		return LoadAlibabaGPUNodes(cs.Path)
	case "alibaba-2018":
		return LoadAlibaba2018Machines(cs.Path, Alibaba2018Options{})
	}
	return nil, fmt.Errorf("unknown cluster source %q", cs.Source)
}

// WorkloadSpec names where jobs come from: "synthetic",
// "alibaba-gpu:PATH" (pods.csv) or "alibaba-batch:PATH" (2018 jobs.csv).
type WorkloadSpec struct {
	Source string // synthetic, alibaba-gpu, alibaba-batch
	Path   string
	// Synthetic generator settings.
	Config WorkloadConfig
	Seed   uint64
	// Compress divides trace times (trace sources only).
	Compress float64
	// MaxInstances caps instances per 2018 batch task (0: all).
	MaxInstances int
}

// ParseWorkloadSpec parses "synthetic" or "SOURCE:PATH".
func ParseWorkloadSpec(s string) (WorkloadSpec, error) {
	if s == "synthetic" || s == "" {
		return WorkloadSpec{Source: "synthetic", Config: DefaultWorkload}, nil
	}
	src, path, ok := strings.Cut(s, ":")
	if !ok || path == "" {
		return WorkloadSpec{}, fmt.Errorf("workload %q: want synthetic, alibaba-gpu:PATH or alibaba-batch:PATH", s)
	}
	switch src {
	case "alibaba-gpu", "alibaba-batch":
		return WorkloadSpec{Source: src, Path: path, Compress: 1}, nil
	}
	return WorkloadSpec{}, fmt.Errorf("workload %q: unknown source %q (want synthetic, alibaba-gpu or alibaba-batch)", s, src)
}

// Load builds the workload for cluster c.
func (ws WorkloadSpec) Load(c *Cluster) (*Workload, error) {
	switch ws.Source {
	case "synthetic":
		return NewSyntheticWorkload(c, ws.Config, ws.Seed)
	case "alibaba-gpu":
		return LoadAlibabaGPUPods(ws.Path, GPUTraceOptions{Compress: ws.Compress})
	case "alibaba-batch":
		return LoadAlibaba2018Batch(ws.Path, Alibaba2018Options{Compress: ws.Compress, MaxInstances: ws.MaxInstances})
	}
	return nil, fmt.Errorf("unknown workload source %q", ws.Source)
}
