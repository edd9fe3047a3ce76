package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/datasets"
	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/rl"
)

func init() { addCommand(newDatasetCmd) }

func newDatasetCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dataset",
		Short: "Convert traces, generate workloads, record transitions and inspect Arrow datasets",
		Long: `dataset reads and writes tegrl's datasets: Arrow IPC files of transitions
(one row per scheduling decision), jobs (a workload), machines (a cluster)
and usage series (docs/datasets.md). Every file carries its kind, format
version, observation schema hash and checksums; readers refuse a file that
does not match.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newDatasetConvertCmd(a), newDatasetGenCmd(a), newDatasetRecordCmd(a), newDatasetInspectCmd(a), newDatasetFetchCmd(a))
	return cmd
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	return enc.Encode(v)
}

// printJSONLines writes one JSON object per element, one per line.
func printJSONLines[T any](w io.Writer, vs []T) error {
	enc := json.NewEncoder(w)
	for i := range vs {
		if err := enc.Encode(&vs[i]); err != nil {
			return fmt.Errorf("write json: %w", err)
		}
	}
	return nil
}

func printConverted(w io.Writer, res datasets.Converted) {
	for _, f := range res.Files {
		fmt.Fprintln(w, f)
	}
	fmt.Fprintf(w, "%d machines, %d jobs, %d usage samples\n", res.Machines, res.Jobs, res.Usage)
}

func newDatasetConvertCmd(a *app) *cobra.Command {
	var (
		from, out    string
		compress     float64
		maxInstances int
		batchRows    int
		jsonOut      bool
	)
	cmd := &cobra.Command{
		Use:   "convert",
		Short: "Convert Alibaba cluster traces into machines.arrow, jobs.arrow and usage.arrow",
		Long: `convert reads a public Alibaba trace with env's loaders (the same ones
tegrl simulate uses) and writes Arrow datasets into --out:

  alibaba-gpu[:DIR]  the 2023 GPU trace: DIR/nodes.csv -> machines.arrow,
                     DIR/pods.csv -> jobs.arrow (.gz too; no DIR: the
                     bundled copy)
  alibaba-2018:DIR   the 2018 trace: DIR/machine_meta.csv -> machines.arrow,
                     DIR/machine_usage.csv -> usage.arrow (when present),
                     batch tasks from DIR/jobs.csv or the sibling
                     alibaba-v2018-batch/jobs.csv -> jobs.arrow (when found)
  alibaba-batch[:FILE] the 2018 batch task table -> jobs.arrow (no FILE:
                     the bundled copy)`,
		Example: `  tegrl dataset convert --from alibaba-gpu --out gpu-arrow   # the bundled 2023 GPU trace
  tegrl dataset convert --from alibaba-gpu:traces/openb --out gpu-arrow   # traces/openb holds nodes.csv and pods.csv
  tegrl dataset convert --from alibaba-batch:jobs.csv.gz --out batch-arrow`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := datasets.ConvertSpec(from, out, datasets.ConvertOptions{Compress: compress, MaxInstances: maxInstances,
				Writer: datasets.WriterOptions{BatchRows: batchRows}, Log: a.log})
			if err != nil {
				return err
			}
			if jsonOut {
				return printJSON(a.stdout, res)
			}
			printConverted(a.stdout, res)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&from, "from", "", "trace to convert: alibaba-gpu[:DIR], alibaba-2018:DIR or alibaba-batch[:FILE] (no DIR or FILE: the bundled copy)")
	fl.StringVar(&out, "out", "", "output folder (created if missing)")
	fl.Float64Var(&compress, "compress", 1, "time-compression factor (arrivals and durations divided by it)")
	fl.IntVar(&maxInstances, "max-instances", 1, "instances per 2018 batch task turned into jobs (0: all 2.5M)")
	fl.IntVar(&batchRows, "batch-rows", datasets.DefaultBatchRows, "rows per Arrow record batch")
	fl.BoolVar(&jsonOut, "json", false, "print one JSON object instead of text")
	cmd.MarkFlagRequired("from")
	cmd.MarkFlagRequired("out")
	return cmd
}

func newDatasetGenCmd(a *app) *cobra.Command {
	var (
		out       string
		machines  int
		seed      uint64
		load      float64
		duration  string
		batchRows int
		jsonOut   bool
	)
	cmd := &cobra.Command{
		Use:   "gen",
		Short: "Write a synthetic cluster and workload as machines.arrow and jobs.arrow",
		Long: `gen writes the synthetic cluster and bursty AI workload that tegrl simulate
uses by default (same generators, same seed, same jobs) as Arrow datasets,
so that a run can be replayed or shared. The same flags always write the
same bytes.`,
		Example: `  tegrl dataset gen --machines 1000 --seed 1 --load 0.9 --duration 6h --out data/synthetic`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			horizon, err := env.ParseSeconds(duration)
			if err != nil {
				return err
			}
			if horizon <= 0 {
				return fmt.Errorf("--duration %q: the workload needs a positive horizon", duration)
			}
			res, err := datasets.Generate(out, datasets.GenConfig{Machines: machines, Seed: seed,
				Workload: env.WorkloadConfig{Horizon: horizon, Load: load}, Writer: datasets.WriterOptions{BatchRows: batchRows}})
			if err != nil {
				return err
			}
			a.log.Info("generated", "machines", res.Machines, "jobs", res.Jobs, "out", out)
			if jsonOut {
				return printJSON(a.stdout, res)
			}
			printConverted(a.stdout, res)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "", "output folder (created if missing)")
	fl.IntVar(&machines, "machines", 1000, "machines of the synthetic cluster")
	fl.Uint64Var(&seed, "seed", 1, "seed of the cluster and workload")
	fl.Float64Var(&load, "load", env.DefaultWorkload.Load, "offered load (fraction of the busier of CPU and GPU capacity)")
	fl.StringVar(&duration, "duration", "6h", "span of arrivals (Go duration such as 6h, or seconds)")
	fl.IntVar(&batchRows, "batch-rows", datasets.DefaultBatchRows, "rows per Arrow record batch")
	fl.BoolVar(&jsonOut, "json", false, "print one JSON object instead of text")
	cmd.MarkFlagRequired("out")
	return cmd
}

// recordFlags are the flags of `tegrl dataset record`: simulate's cluster,
// workload, run and TEG switch flags, plus the output.
type recordFlags struct {
	runSource
	scheduler, out, runID string
	batchRows             int
	maxBytes              int64
	episode               int32
	jsonOut               bool
	teg                   *tegFlag
	gpu                   gpuFlags
}

func newDatasetRecordCmd(a *app) *cobra.Command {
	f := &recordFlags{}
	cmd := &cobra.Command{
		Use:   "record",
		Short: "Run a scheduler in the simulator and record one transition per decision",
		Long: `record runs a simulation as tegrl simulate does (same cluster, workload, seed
and TEG flags) under one scheduler, built-in or a policy file, and writes
into --out: transitions.arrow, one row per scheduling decision (the
observation tensors, the action, the reward accrued until the next
decision, done on the last row; behaviour log-prob, value and policy
version are 0 for non-learned schedulers), plus the run's machines.arrow
and jobs.arrow so that it can be replayed. Rows are written as they come:
memory does not grow with the run. A transition of the default 100-machine
cluster is about 134 KB (401 decisions, 53.8 MB in the default hour);
it grows with the machines and, up to 512 job rows (datasets.MaxJobRows:
the pending job and the first running ones), with the jobs running.
--max-bytes caps the file (default 4 GiB): the recording stops before
the row that would cross it, with transitions.arrow valid and complete
up to there. SIGINT or SIGTERM stops it likewise at the end of the
current tick. A stopped recording writes no run.json (it cannot be
replayed) and exits non-zero. A progress bar goes to stderr when it is a
terminal.

With --scenario CLUSTER-WORKLOAD (see tegrl simulate) it records a GPU
training cluster's run under an allocation policy instead: the jobs drawn
(dljobs.arrow), every allocation the policy computed (allocations.arrow:
allocation, time, job, GPU type, share of time) and gpu-run.json (the
configuration and final metrics), which tegrl replay re-runs.`,
		Example: `  tegrl dataset record --scheduler langevin --machines 100 --duration 1h --seed 1 --out data/langevin
  tegrl dataset record --scheduler fgd --cluster alibaba-gpu --duration 30m --out data/fgd-gpu
  tegrl dataset record --scenario gavel-multi --rate 1.2 --scheduler tiresias --seed 0 --out data/tiresias`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRecord(cmd, a, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.scheduler, "scheduler", "fgd", "scheduler: a built-in name ("+strings.Join(env.SchedulerNames, ", ")+") or a policy file")
	f.addFlags(fl, 100, "1h", a.stderr)
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the workload, failures and scheduler randomness (the synthetic cluster has --cluster-seed)")
	f.teg = addTEGFlag(fl)
	fl.StringVar(&f.out, "out", "", "output folder (created if missing)")
	fl.StringVar(&f.runID, "run-id", "", "run ID stored in every row (default SCHEDULER-seedSEED)")
	fl.Int32Var(&f.episode, "episode", 0, "episode number stored in every row")
	fl.IntVar(&f.batchRows, "batch-rows", datasets.DefaultBatchRows, "rows per Arrow record batch (batches also close at 64 MiB)")
	fl.BoolVar(&f.jsonOut, "json", false, "print one JSON object (files, transitions, run metrics) instead of text")
	fl.Int64Var(&f.maxBytes, "max-bytes", 4<<30, "stop before transitions.arrow exceeds this many bytes, keeping it valid (0: no cap)")
	f.gpu.addFlags(fl)
	cmd.MarkFlagRequired("out")
	return cmd
}

func runRecord(cmd *cobra.Command, a *app, f *recordFlags) error {
	if f.gpu.scenario != "" {
		return runRecordGPU(cmd, a, f)
	}
	newSched, err := rl.SchedulerFactory(f.scheduler)
	if err != nil {
		return err
	}
	sched := newSched()
	c, w, cfg, err := f.build()
	if err != nil {
		return err
	}
	if err := rl.CheckSchedulerFit(f.scheduler, rl.EnvCluster, len(c.Machines), a.log); err != nil {
		return err
	}
	teg, err := f.teg.forSched(sched)
	if err != nil {
		return err
	}
	cfg.TEG = &teg
	runID := f.runID
	if runID == "" {
		runID = fmt.Sprintf("%s-seed%d", sched.Name(), f.seed)
	}
	a.log.Info("record", "scheduler", sched.Name(), "cluster", f.cluster, "machines", len(c.Machines), "gpus", c.TotalGPUs(),
		"workload", w.Name, "jobs", len(w.Jobs), "duration_s", cfg.Duration, "out", f.out)
	rc := datasets.RecordConfig{RunID: runID, Episode: f.episode, Sim: cfg, SchedulerSpec: f.scheduler, Writer: datasets.WriterOptions{BatchRows: f.batchRows,
		Source: fmt.Sprintf("record scheduler=%s cluster=%s workload=%s seed=%d", f.scheduler, f.cluster, f.workload, f.seed)}, MaxBytes: f.maxBytes}
	if cfg.Duration > 0 {
		tick := cfg.Tick
		if tick == 0 {
			tick = env.DefaultSimConfig.Tick
		}
		bar := newProgress(a.stderr, int(cfg.Duration/tick), "record")
		defer bar.Finish()
		p := tickProgress(bar, 1, tick)
		rc.Progress = func(now float64) { p(0, now) }
	}
	if f.maxBytes < 0 {
		return fmt.Errorf("--max-bytes %d: want >= 0 (0: no cap)", f.maxBytes)
	}
	res, err := datasets.RecordRun(cmd.Context(), f.out, c, w, sched, rc)
	if errors.Is(err, datasets.ErrMaxBytes) {
		return fmt.Errorf("%w (raise --max-bytes, or shorten --duration)", err)
	}
	if err != nil {
		return err
	}
	a.log.Info("recorded", "transitions", res.Transitions, "reward_mean", res.Metrics.RewardMean)
	if f.jsonOut {
		return printJSON(a.stdout, res)
	}
	for _, p := range res.Files {
		fmt.Fprintln(a.stdout, p)
	}
	fmt.Fprintf(a.stdout, "%d transitions (%s, %d machines, %d jobs, %.0f simulated s, reward mean %.3f)\n",
		res.Transitions, sched.Name(), res.Machines, res.Jobs, res.Metrics.SimTimeS, res.Metrics.RewardMean)
	return nil
}

func newDatasetInspectCmd(a *app) *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "inspect FILE",
		Short: "Print a dataset's kind, schema, metadata, row and batch counts and column statistics",
		Long: `inspect reads an Arrow dataset batch by batch and prints its kind, schema
(fields and types), metadata (observation schema hash, shapes), row and
batch counts, and for each numeric column (list columns: their items) the
count, nulls, NaNs, min, mean and max. It then runs the kind's reader over
the file: a file that fails its checks is reported (and the command
fails) after the summary.`,
		Example: `  tegrl dataset inspect data/langevin/transitions.arrow
  tegrl dataset inspect --json data/gpu/jobs.arrow`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := datasets.Inspect(args[0])
			if err != nil {
				return err
			}
			if jsonOut {
				if err := printJSON(a.stdout, s); err != nil {
					return err
				}
			} else if err := s.WriteText(a.stdout); err != nil {
				return err
			}
			if !s.Valid {
				return errors.New(s.Error)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print one JSON object instead of text")
	return cmd
}
