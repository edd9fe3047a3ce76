package datasets

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/tegrl/tegrl/env"
)

// Output file names in a dataset directory.
const (
	MachinesFile    = "machines.arrow"
	JobsFile        = "jobs.arrow"
	UsageFile       = "usage.arrow"
	TransitionsFile = "transitions.arrow"
)

// ConvertOptions configures the trace converters.
type ConvertOptions struct {
	// Compress divides trace times (arrivals and durations); 0 or 1 keeps
	// real time.
	Compress float64
	// MaxInstances caps the instances of one 2018 batch task turned into
	// jobs (0: all 2.5M).
	MaxInstances int
	Writer       WriterOptions
	Log          *slog.Logger // nil: no logs
}

// Converted lists what a converter wrote.
type Converted struct {
	Files    []string `json:"files"`
	Machines int      `json:"machines"`
	Jobs     int      `json:"jobs"`
	Usage    int64    `json:"usage_samples"`
}

func (o *ConvertOptions) logger() *slog.Logger {
	if o.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Log
}

func (o *ConvertOptions) compress() float64 {
	if o.Compress <= 0 {
		return 1
	}
	return o.Compress
}

func writerWithSource(opt WriterOptions, src string) WriterOptions {
	if opt.Source == "" {
		opt.Source = src
	}
	return opt
}

// ConvertAlibabaGPU converts the 2023 GPU trace in dir (nodes.csv and
// pods.csv, plain or .gz, read by env's loaders; dir "" is the bundled
// copy) into machines.arrow and jobs.arrow in out.
func ConvertAlibabaGPU(dir, out string, opt ConvertOptions) (Converted, error) {
	var res Converted
	if err := os.MkdirAll(out, 0o755); err != nil {
		return res, fmt.Errorf("convert: %w", err)
	}
	c, err := env.ClusterSpec{Source: "alibaba-gpu", Path: dir}.Load()
	if err != nil {
		return res, fmt.Errorf("convert alibaba-gpu: %w", err)
	}
	mpath := filepath.Join(out, MachinesFile)
	if err := WriteCluster(mpath, c, writerWithSource(opt.Writer, "alibaba-gpu:nodes.csv")); err != nil {
		return res, err
	}
	res.Files, res.Machines = append(res.Files, mpath), len(c.Machines)
	w, err := env.WorkloadSpec{Source: "alibaba-gpu", Path: dir, Compress: opt.compress()}.Load(c)
	if err != nil {
		return res, fmt.Errorf("convert alibaba-gpu: %w", err)
	}
	jpath := filepath.Join(out, JobsFile)
	if err := WriteWorkload(jpath, w, writerWithSource(opt.Writer, fmt.Sprintf("alibaba-gpu:pods.csv compress=%g", opt.compress()))); err != nil {
		return res, err
	}
	res.Files, res.Jobs = append(res.Files, jpath), len(w.Jobs)
	opt.logger().Info("converted", "source", "alibaba-gpu", "machines", res.Machines, "jobs", res.Jobs)
	return res, nil
}

// ConvertAlibaba2018 converts the 2018 trace in dir: machine_meta.csv into
// machines.arrow (env's loader), machine_usage.csv, when present, into
// usage.arrow (streamed), and the batch tasks, when found (dir/jobs.csv or
// the sibling alibaba-v2018-batch/jobs.csv, as laid out in the
// repository's data folder), into jobs.arrow (env's loader).
func ConvertAlibaba2018(dir, out string, opt ConvertOptions) (Converted, error) {
	var res Converted
	log := opt.logger()
	if err := os.MkdirAll(out, 0o755); err != nil {
		return res, fmt.Errorf("convert: %w", err)
	}
	c, err := env.LoadAlibaba2018Machines(filepath.Join(dir, "machine_meta.csv"), env.Alibaba2018Options{})
	if err != nil {
		return res, fmt.Errorf("convert alibaba-2018: %w", err)
	}
	mpath := filepath.Join(out, MachinesFile)
	if err := WriteCluster(mpath, c, writerWithSource(opt.Writer, "alibaba-2018:machine_meta.csv")); err != nil {
		return res, err
	}
	res.Files, res.Machines = append(res.Files, mpath), len(c.Machines)

	usage := filepath.Join(dir, "machine_usage.csv")
	switch _, err := os.Stat(usage); {
	case err == nil:
		upath := filepath.Join(out, UsageFile)
		n, err := ConvertAlibaba2018Usage(usage, upath, opt.Writer)
		if err != nil {
			return res, fmt.Errorf("convert alibaba-2018: %w", err)
		}
		res.Files, res.Usage = append(res.Files, upath), n
	case errors.Is(err, fs.ErrNotExist):
		log.Warn("no usage table; usage.arrow not written", "path", usage)
	default:
		return res, fmt.Errorf("convert alibaba-2018: %w", err)
	}

	batch := ""
	for _, p := range []string{filepath.Join(dir, "jobs.csv"), filepath.Join(filepath.Dir(filepath.Clean(dir)), "alibaba-v2018-batch", "jobs.csv")} {
		if _, err := os.Stat(p); err == nil {
			batch = p
			break
		}
	}
	if batch == "" {
		log.Warn("no batch task table (jobs.csv); jobs.arrow not written", "dir", dir)
	} else {
		w, err := env.LoadAlibaba2018Batch(batch, env.Alibaba2018Options{Compress: opt.compress(), MaxInstances: opt.MaxInstances})
		if err != nil {
			return res, fmt.Errorf("convert alibaba-2018: %w", err)
		}
		jpath := filepath.Join(out, JobsFile)
		src := fmt.Sprintf("alibaba-batch:jobs.csv compress=%g max_instances=%d", opt.compress(), opt.MaxInstances)
		if err := WriteWorkload(jpath, w, writerWithSource(opt.Writer, src)); err != nil {
			return res, err
		}
		res.Files, res.Jobs = append(res.Files, jpath), len(w.Jobs)
	}
	log.Info("converted", "source", "alibaba-2018", "machines", res.Machines, "jobs", res.Jobs, "usage_samples", res.Usage)
	return res, nil
}

// ConvertAlibabaBatch converts the 2018 batch task table at path (plain
// or .gz; "" is the bundled copy) into jobs.arrow in out.
func ConvertAlibabaBatch(path, out string, opt ConvertOptions) (Converted, error) {
	var res Converted
	if err := os.MkdirAll(out, 0o755); err != nil {
		return res, fmt.Errorf("convert: %w", err)
	}
	w, err := env.WorkloadSpec{Source: "alibaba-batch", Path: path, Compress: opt.compress(), MaxInstances: opt.MaxInstances}.Load(nil)
	if err != nil {
		return res, fmt.Errorf("convert alibaba-batch: %w", err)
	}
	jpath := filepath.Join(out, JobsFile)
	name := "jobs.csv" // the bundled table
	if path != "" {
		name = filepath.Base(path)
	}
	src := fmt.Sprintf("alibaba-batch:%s compress=%g max_instances=%d", name, opt.compress(), opt.MaxInstances)
	if err := WriteWorkload(jpath, w, writerWithSource(opt.Writer, src)); err != nil {
		return res, err
	}
	res.Files, res.Jobs = []string{jpath}, len(w.Jobs)
	return res, nil
}

// GenConfig configures Generate.
type GenConfig struct {
	Machines int
	Seed     uint64
	Workload env.WorkloadConfig // Horizon and Load as set; zero fields: env.DefaultWorkload's
	Writer   WriterOptions
}

// Generate writes a synthetic cluster (env.NewSyntheticCluster) and
// workload (env.NewSyntheticWorkload) as machines.arrow and jobs.arrow in
// out.
func Generate(out string, cfg GenConfig) (Converted, error) {
	var res Converted
	if err := os.MkdirAll(out, 0o755); err != nil {
		return res, fmt.Errorf("gen: %w", err)
	}
	c, err := env.NewSyntheticCluster(cfg.Machines, cfg.Seed)
	if err != nil {
		return res, fmt.Errorf("gen: %w", err)
	}
	wc := env.DefaultWorkload
	if cfg.Workload.Horizon > 0 {
		wc.Horizon = cfg.Workload.Horizon
	}
	if cfg.Workload.Load > 0 {
		wc.Load = cfg.Workload.Load
	}
	w, err := env.NewSyntheticWorkload(c, wc, cfg.Seed)
	if err != nil {
		return res, fmt.Errorf("gen: %w", err)
	}
	src := fmt.Sprintf("synthetic machines=%d seed=%d load=%g horizon_s=%g", cfg.Machines, cfg.Seed, wc.Load, wc.Horizon)
	mpath, jpath := filepath.Join(out, MachinesFile), filepath.Join(out, JobsFile)
	if err := WriteCluster(mpath, c, writerWithSource(cfg.Writer, src)); err != nil {
		return res, err
	}
	if err := WriteWorkload(jpath, w, writerWithSource(cfg.Writer, src)); err != nil {
		return res, err
	}
	return Converted{Files: []string{mpath, jpath}, Machines: len(c.Machines), Jobs: len(w.Jobs)}, nil
}
