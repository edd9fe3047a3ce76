package report

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/tegrl/tegrl/env"
)

// ABOptions is tegrl ab as its command line gives it: the contenders, the
// seeds, the cluster and workload of the machine-level simulator, the
// bootstrap settings and the output. Run turns it into an ABConfig and
// prints the report; RunGPU does the same on a GPU training scenario. Its
// errors name the command's flags.
type ABOptions struct {
	A        string `flag:"a" default:"langevin" usage:"scheduler A, the baseline: a built-in name or a policy file"`
	B        string `flag:"b" usage:"scheduler B, compared with A: a built-in name or a policy file (required)"`
	Ref      string `flag:"ref" default:"kube,bestfit,fgd" usage:"reference schedulers, comma-separated (\"\" for none)"`
	Seed     uint64 `flag:"seed" default:"1" usage:"seed of the synthetic cluster and of the bootstrap resampling"`
	Machines int    `flag:"machines" default:"1000" usage:"machines of the synthetic cluster"`
	Workload string `flag:"workload" default:"synthetic" usage:"workload: synthetic (one per seed), alibaba-gpu:PATH (pods.csv) or alibaba-batch:PATH (2018 jobs.csv)"`
	Duration string `flag:"duration" usage:"simulated time per run (Go duration such as 6h, or seconds); default: the synthetic horizon (6h), or until a trace drains"`
	Ticks    int    `flag:"ticks" usage:"stop each run after this many ticks (0: no limit beyond --duration)"`
	// Tick, Load, MTBF, SeriesEvery, Resamples and Level take their
	// defaults from DefaultABOptions.
	Tick         float64 `flag:"tick" usage:"seconds per tick"`
	Load         float64 `flag:"load" usage:"offered load of the synthetic workload (fraction of the busier of CPU and GPU capacity)"`
	Compress     float64 `flag:"compress" default:"1" usage:"time-compression factor for trace workloads"`
	MaxInstances int     `flag:"max-instances" default:"1" usage:"instances per 2018 batch task turned into jobs (0: all)"`
	MTBF         float64 `flag:"mtbf" usage:"mean time between failures of one machine, seconds (negative: no failures)"`
	SeriesEvery  int     `flag:"series-every" usage:"ticks between samples of the time series plotted for A and B"`
	Resamples    int     `flag:"resamples" usage:"bootstrap resamples of the seeds"`
	Level        float64 `flag:"level" usage:"confidence level of the intervals"`
	Workers      int     `flag:"workers" usage:"runs at once; 0 = GOMAXPROCS"`
	JSON         bool    `flag:"json" usage:"print the report as one JSON object instead of a table"`
	Out          string  `flag:"out" usage:"write report.md, report.json and the PNG plots to this directory (created if needed)"`
	// Seeds and Cluster are flags whose help is computed (SeedsHelp,
	// env.ClusterSpecHelp), so the command declares them itself.
	Seeds   string
	Cluster string

	// TEG is a scheduler's TEG configuration (the --teg flag over its
	// governor); nil leaves the schedulers' own.
	TEG func(env.Scheduler) (env.TEGConfig, error)
	// Resolve makes the contender of a scheduler spec, checking that it
	// runs cluster simulations; CheckScale warns when a spec does not suit
	// a cluster of that many machines (nil: no warning).
	Resolve    func(spec string) (Contender, error)
	CheckScale func(spec string, machines int)
	// Set tells whether a flag was given (nil: none was).
	Set     func(flag string) bool
	Command string
	Logger  *slog.Logger
	Bar     io.Writer // progress bar, drawn when it is a terminal
}

// DefaultABOptions is tegrl ab's defaults that are not literals: the
// simulator's tick and failure rate, the synthetic load and the bootstrap
// settings.
func DefaultABOptions() ABOptions {
	return ABOptions{Seeds: "1-20", Cluster: "synthetic", Tick: env.DefaultSimConfig.Tick, Load: env.DefaultWorkload.Load,
		MTBF: env.DefaultSimConfig.MTBF, SeriesEvery: DefaultABSeriesEvery, Resamples: DefaultResamples, Level: DefaultLevel}
}

func (o *ABOptions) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

func (o *ABOptions) contender(flag, spec string) (Contender, error) {
	c, err := o.Resolve(spec)
	if err != nil {
		return Contender{}, fmt.Errorf("--%s: %w", flag, err)
	}
	return c, nil
}

// Config checks the options and resolves the schedulers; the cluster,
// workload and duration are left to Run.
func (o *ABOptions) Config() (ABConfig, error) {
	if o.B == "" {
		return ABConfig{}, fmt.Errorf("--b is required: the scheduler or policy file to compare with --a %s", o.A)
	}
	cfg := ABConfig{ClusterName: o.Cluster, Sim: env.SimConfig{Tick: o.Tick, MaxTicks: o.Ticks, MTBF: o.MTBF},
		SeriesEvery: o.SeriesEvery, Resamples: o.Resamples, Level: o.Level, BootstrapSeed: o.Seed, Workers: o.Workers, TEG: o.TEG}
	var err error
	if cfg.A, err = o.contender("a", o.A); err != nil {
		return cfg, err
	}
	if cfg.B, err = o.contender("b", o.B); err != nil {
		return cfg, err
	}
	if strings.TrimSpace(o.Ref) != "" {
		var names []string
		for name := range strings.SplitSeq(o.Ref, ",") {
			name = strings.TrimSpace(name)
			if name == "" || slices.Contains(names, name) {
				return cfg, fmt.Errorf("--ref %q: empty or repeated name %q", o.Ref, name)
			}
			names = append(names, name)
			r, err := o.contender("ref", name)
			if err != nil {
				return cfg, err
			}
			cfg.Reference = append(cfg.Reference, r)
		}
	}
	if cfg.Seeds, err = ParseABSeeds(o.Seeds); err != nil {
		return cfg, fmt.Errorf("--seeds: %w", err)
	}
	switch {
	case o.SeriesEvery < 1:
		return cfg, fmt.Errorf("--series-every %d: want at least 1 tick", o.SeriesEvery)
	case o.Resamples < 1:
		return cfg, fmt.Errorf("--resamples %d: want at least 1", o.Resamples)
	case !(o.Level > 0 && o.Level < 1):
		return cfg, fmt.Errorf("--level %v: want a number in (0, 1), e.g. 0.95", o.Level)
	case o.Workers < 0:
		return cfg, fmt.Errorf("--workers %d: want 0 (GOMAXPROCS) or more", o.Workers)
	}
	return cfg, nil
}

// loadWorkload loads the cluster of --cluster and sets the workload of
// each seed and the runs' duration.
func (o *ABOptions) loadWorkload(cfg *ABConfig) error {
	cs, err := env.ParseClusterSpec(o.Cluster)
	if err != nil {
		return fmt.Errorf("--cluster: %w", err)
	}
	cs.Machines, cs.Seed = o.Machines, o.Seed
	ws, err := env.ParseWorkloadSpec(o.Workload)
	if err != nil {
		return fmt.Errorf("--workload: %w", err)
	}
	ws.Config.Load, ws.Compress, ws.MaxInstances = o.Load, o.Compress, o.MaxInstances
	if cfg.Cluster, err = cs.Load(); err != nil {
		return fmt.Errorf("load cluster %s: %w", o.Cluster, err)
	}
	switch {
	case o.Duration != "":
		if cfg.Sim.Duration, err = env.ParseSeconds(o.Duration); err != nil {
			return fmt.Errorf("--duration: %w", err)
		}
	case ws.Source == "synthetic":
		cfg.Sim.Duration = ws.Config.Horizon
	}
	if cfg.Workload, err = SeedWorkloads(cfg.Cluster, ws); err != nil {
		return fmt.Errorf("load workload %s: %w", o.Workload, err)
	}
	return nil
}

// Run runs the machine-level A/B evaluation and prints its report to
// stdout, as text or JSON, writing the --out files when asked.
func (o *ABOptions) Run(ctx context.Context, stdout io.Writer) error {
	cfg, err := o.Config()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := o.loadWorkload(&cfg); err != nil {
		return err
	}
	if o.CheckScale != nil {
		for _, spec := range []string{o.A, o.B} {
			o.CheckScale(spec, len(cfg.Cluster.Machines))
		}
	}
	log := o.logger()
	runs := cfg.Runs()
	log.Info("ab", "a", o.A, "b", o.B, "ref", o.Ref, "seeds", FormatSeeds(cfg.Seeds), "cluster", o.Cluster,
		"machines", len(cfg.Cluster.Machines), "gpus", cfg.Cluster.TotalGPUs(), "workload", o.Workload, "duration_s", cfg.Sim.Duration, "runs", runs)
	bar := NewProgress(o.Bar, runs, "ab")
	cfg.OnRun = func() { _ = bar.Add(1) }
	res, err := RunAB(ctx, cfg)
	_ = bar.Finish()
	if err != nil {
		return err
	}
	log.Info("ab done", "runs", runs, "took", time.Since(start).Round(time.Millisecond))
	return o.write(stdout, &res.Report, func(js []byte) error {
		n, err := WriteABFiles(o.Out, res, js, o.Command)
		if err == nil {
			log.Info("wrote report", "dir", o.Out, "files", n)
		}
		return err
	})
}

// RunGPU runs the A/B evaluation of two allocation policies on the GPU
// training scenario run and prints its report as Run does.
func (o *ABOptions) RunGPU(ctx context.Context, run GPURunConfig, stdout io.Writer) error {
	if o.B == "" {
		return fmt.Errorf("--b is required: the allocation policy to compare with --a %s", o.A)
	}
	cfg := GPUABConfig{Run: run, A: o.A, B: o.B, Resamples: o.Resamples, Level: o.Level, BootstrapSeed: o.Seed, Workers: o.Workers}
	// The machine-level references mean nothing here: only given ones count.
	if o.Set != nil && o.Set("ref") && strings.TrimSpace(o.Ref) != "" {
		for _, r := range strings.Split(o.Ref, ",") {
			cfg.Reference = append(cfg.Reference, strings.TrimSpace(r))
		}
	}
	var err error
	if cfg.Seeds, err = ParseABSeeds(o.Seeds); err != nil {
		return fmt.Errorf("--seeds: %w", err)
	}
	runs := (2 + len(cfg.Reference)) * len(cfg.Seeds)
	o.logger().Info("ab", "scenario", run.Scenario, "a", o.A, "b", o.B, "ref", cfg.Reference, "seeds", FormatSeeds(cfg.Seeds), "runs", runs)
	bar := NewProgress(o.Bar, runs, "ab")
	cfg.OnRun = func() { _ = bar.Add(1) }
	rep, _, err := RunGPUAB(ctx, cfg)
	_ = bar.Finish()
	if err != nil {
		return err
	}
	return o.write(stdout, rep, func(js []byte) error {
		_, err := WriteGPUABFiles(o.Out, rep, js, o.Command)
		return err
	})
}

// write writes the --out files with files when --out is given, then rep
// to stdout as JSON or text.
func (o *ABOptions) write(stdout io.Writer, rep *ABReport, files func(js []byte) error) error {
	var js bytes.Buffer
	if err := WriteABJSON(&js, rep); err != nil {
		return err
	}
	if o.Out != "" {
		if err := files(js.Bytes()); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	if o.JSON {
		_, err := stdout.Write(js.Bytes())
		return err
	}
	return WriteABText(stdout, rep)
}
