package env

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tegrl/tegrl/data"
)

// Trace specs. Every command names a cluster or workload source the same
// way: "synthetic", a trace source alone ("alibaba-gpu": the copy bundled in
// the repository's data package), or "SOURCE:PATH" where PATH is the table
// itself (plain or .gz) or a folder holding it under its usual name.

// traceTable is one table of a trace source: its usual file name and the
// bundled copy.
type traceTable struct {
	file    string   // usual file name, e.g. nodes.csv
	bundled string   // data package name
	sources []string // the spec sources that name this table
}

var (
	tableGPUNodes    = traceTable{"nodes.csv", "alibaba-gpu-v2023/nodes.csv", []string{"alibaba-gpu"}}
	tableGPUPods     = traceTable{"pods.csv", "alibaba-gpu-v2023/pods.csv", []string{"alibaba-gpu"}}
	table2018Meta    = traceTable{"machine_meta.csv", "alibaba-v2018/machine_meta.csv", []string{"alibaba-2018"}}
	table2018Batch   = traceTable{"jobs.csv", "alibaba-v2018-batch/jobs.csv", []string{"alibaba-batch"}}
	tableSpotNodes   = traceTable{"node_info_df.csv", "alibaba-gpu-v2026-spot/node_info_df.csv", []string{"alibaba-spot"}}
	clusterSources   = map[string]traceTable{"alibaba-gpu": tableGPUNodes, "alibaba-spot": tableSpotNodes, "alibaba-2018": table2018Meta}
	workloadSources  = map[string]traceTable{"alibaba-gpu": tableGPUPods, "alibaba-batch": table2018Batch}
	clusterSpecHelp  = "synthetic, alibaba-gpu[:FILE] (nodes.csv), alibaba-spot[:FILE] (node_info_df.csv) or alibaba-2018[:FILE] (machine_meta.csv)"
	workloadSpecHelp = "synthetic, alibaba-gpu[:FILE] (pods.csv) or alibaba-batch[:FILE] (2018 jobs.csv)"
)

// ClusterSpecHelp and WorkloadSpecHelp describe the spec grammar for flag
// help: a source alone is the bundled copy, SOURCE:FILE a file on disk.
const (
	ClusterSpecHelp  = "cluster: synthetic, alibaba-gpu (bundled nodes.csv), alibaba-spot (bundled spot-trace node_info_df.csv) or alibaba-2018 (bundled machine_meta.csv); SOURCE:FILE reads FILE (or FOLDER/usual-name, .gz too)"
	WorkloadSpecHelp = "workload: synthetic, alibaba-gpu (bundled pods.csv) or alibaba-batch (bundled 2018 jobs.csv); SOURCE:FILE reads FILE (or FOLDER/usual-name, .gz too)"
)

// ErrNoSuchFile is returned (wrapped) when a trace spec names a file or
// folder that does not exist; such errors match fs.ErrNotExist too.
var ErrNoSuchFile = errors.New("no such file")

// noSuchFile names the missing path.
type noSuchFile struct{ path, detail string }

func (e *noSuchFile) Error() string {
	if e.detail != "" {
		return e.path + ": no such file (" + e.detail + ")"
	}
	return e.path + ": no such file"
}

func (e *noSuchFile) Is(target error) bool {
	return target == ErrNoSuchFile || target == fs.ErrNotExist
}

// openTable opens one table: the bundled copy when path is "" or the
// table's source alone ("alibaba-gpu"), else path, which may carry the
// source as a prefix ("alibaba-gpu:FILE"): a file, or a folder holding the
// table under its usual name, plain or .gz. It returns the reader and the
// name errors and workloads carry.
func openTable(t traceTable, path string) (io.ReadCloser, string, error) {
	for _, src := range t.sources {
		if path == src {
			path = ""
		} else if rest, ok := strings.CutPrefix(path, src+":"); ok && rest != "" {
			path = rest
		}
	}
	if path == "" {
		r, err := data.Open(t.bundled)
		if err != nil {
			return nil, "", err
		}
		return r, filepath.Base(t.bundled), nil
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		for _, name := range []string{t.file, t.file + ".gz"} {
			p := filepath.Join(path, name)
			if _, err := os.Stat(p); err == nil {
				path = p
				break
			}
		}
		if st, _ := os.Stat(path); st != nil && st.IsDir() {
			return nil, "", fmt.Errorf("open trace: %w", &noSuchFile{path, "the folder holds no " + t.file + " or " + t.file + ".gz"})
		}
	}
	r, err := data.OpenPath(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("open trace: %w", &noSuchFile{path: path})
		}
		return nil, "", fmt.Errorf("open trace: %w", err)
	}
	return r, strings.TrimSuffix(filepath.Base(path), ".gz"), nil
}

// parseSpec splits "SOURCE" or "SOURCE:PATH" against the known sources.
func parseSpec(kind, s, help string, known map[string]traceTable) (src, path string, err error) {
	src, path, hasPath := strings.Cut(s, ":")
	if _, ok := known[src]; !ok {
		return "", "", fmt.Errorf("%s %q: unknown source %q (want %s)", kind, s, src, help)
	}
	if hasPath && path == "" {
		return "", "", fmt.Errorf("%s %q: empty file name after %q (write %s alone for the bundled copy)", kind, s, src+":", src)
	}
	return src, path, nil
}

// ClusterSpec names where a cluster comes from, as the CLI writes it:
// "synthetic", "alibaba-gpu" or "alibaba-2018" (the bundled tables), or
// "SOURCE:PATH" (a file on disk).
type ClusterSpec struct {
	Source   string // synthetic, alibaba-gpu, alibaba-spot, alibaba-2018
	Path     string // "" for the bundled copy
	Machines int    // synthetic only
	Seed     uint64 // synthetic only
}

// ParseClusterSpec parses "synthetic", "SOURCE" or "SOURCE:PATH".
func ParseClusterSpec(s string) (ClusterSpec, error) {
	if s == "synthetic" || s == "" {
		return ClusterSpec{Source: "synthetic"}, nil
	}
	src, path, err := parseSpec("cluster", s, clusterSpecHelp, clusterSources)
	if err != nil {
		return ClusterSpec{}, err
	}
	return ClusterSpec{Source: src, Path: path}, nil
}

// Load builds the cluster.
func (cs ClusterSpec) Load() (*Cluster, error) {
	switch cs.Source {
	case "synthetic":
		return NewSyntheticCluster(cs.Machines, cs.Seed)
	case "alibaba-gpu":
		return loadTable(tableGPUNodes, cs.Path, ReadAlibabaGPUNodes)
	case "alibaba-spot":
		return loadTable(tableSpotNodes, cs.Path, ReadAlibabaSpotNodes)
	case "alibaba-2018":
		return loadTable(table2018Meta, cs.Path, func(name string, r io.Reader) (*Cluster, error) {
			return ReadAlibaba2018Machines(name, r, Alibaba2018Options{})
		})
	}
	return nil, fmt.Errorf("unknown cluster source %q", cs.Source)
}

// Describe says what the cluster is, for the line every command prints.
func (cs ClusterSpec) Describe(c *Cluster) string {
	src := cs.Source
	switch {
	case cs.Source == "synthetic":
		src = fmt.Sprintf("synthetic, cluster seed %d", cs.Seed)
	case cs.Path == "":
		src += ", bundled"
	default:
		src += ", " + cs.Path
	}
	return fmt.Sprintf("cluster: %d machines, %d GPUs (%s)", len(c.Machines), c.TotalGPUs(), src)
}

func loadTable[T any](t traceTable, path string, read func(string, io.Reader) (T, error)) (T, error) {
	var zero T
	r, name, err := openTable(t, path)
	if err != nil {
		return zero, err
	}
	defer r.Close()
	return read(name, r)
}

// WorkloadSpec names where jobs come from: "synthetic", "alibaba-gpu" or
// "alibaba-batch" (the bundled pods.csv and 2018 jobs.csv) or
// "SOURCE:PATH".
type WorkloadSpec struct {
	Source string // synthetic, alibaba-gpu, alibaba-batch
	Path   string // "" for the bundled copy
	// Synthetic generator settings.
	Config WorkloadConfig
	Seed   uint64
	// Compress divides trace times (trace sources only).
	Compress float64
	// MaxInstances caps instances per 2018 batch task (0: all).
	MaxInstances int
	// Window cuts the trace (trace seconds, before compression); the run
	// starts at the first arrival kept.
	Window TraceWindow
	// TraceLoad, when > 0, resamples or thins the trace's jobs (seeded by Seed)
	// so that its offered load on the cluster is TraceLoad (trace sources only).
	TraceLoad float64
}

// ParseWorkloadSpec parses "synthetic", "SOURCE" or "SOURCE:PATH".
func ParseWorkloadSpec(s string) (WorkloadSpec, error) {
	if s == "synthetic" || s == "" {
		return WorkloadSpec{Source: "synthetic", Config: DefaultWorkload}, nil
	}
	src, path, err := parseSpec("workload", s, workloadSpecHelp, workloadSources)
	if err != nil {
		return WorkloadSpec{}, err
	}
	return WorkloadSpec{Source: src, Path: path, Compress: 1}, nil
}

// Load builds the workload for cluster c.
func (ws WorkloadSpec) Load(c *Cluster) (*Workload, error) {
	var w *Workload
	var err error
	switch ws.Source {
	case "synthetic":
		return NewSyntheticWorkload(c, ws.Config, ws.Seed)
	case "alibaba-gpu":
		w, err = loadTable(tableGPUPods, ws.Path, func(name string, r io.Reader) (*Workload, error) {
			return ReadAlibabaGPUPods(name, r, GPUTraceOptions{Compress: ws.Compress, Window: ws.Window})
		})
	case "alibaba-batch":
		w, err = loadTable(table2018Batch, ws.Path, func(name string, r io.Reader) (*Workload, error) {
			return ReadAlibaba2018Batch(name, r, Alibaba2018Options{Compress: ws.Compress, MaxInstances: ws.MaxInstances, Window: ws.Window})
		})
	default:
		return nil, fmt.Errorf("unknown workload source %q", ws.Source)
	}
	if err != nil || ws.TraceLoad <= 0 {
		return w, err
	}
	return ScaleTraceLoad(w, c, ws.TraceLoad, ws.Seed)
}

// Tick returns the tick a run of this workload should use when the user
// did not set one: tick divided by the compression factor, so that a tick
// spans the same stretch of trace time at every compression (a 10 s tick
// under a 100-fold compression would round every job up to 1,000 trace
// seconds).
func (ws WorkloadSpec) Tick(tick float64) float64 {
	if ws.Source == "synthetic" || !(ws.Compress > 0) {
		return tick
	}
	return tick / ws.Compress
}
