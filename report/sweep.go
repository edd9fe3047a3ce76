package report

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/tegrl/tegrl/env"
)

// SweepParam is one axis of a parameter grid: a TEG parameter name (as
// env.TEGConfig.Set knows it) and the values to try.
type SweepParam struct {
	Name   string
	Values []float64
}

// ParseGrid reads "name=v1,v2;name2=v3" into grid axes, checking names and
// values against env.TEGConfig.Set.
func ParseGrid(spec string) ([]SweepParam, error) {
	var grid []SweepParam
	for _, part := range strings.Split(spec, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, vals, ok := strings.Cut(part, "=")
		if !ok || vals == "" {
			return nil, fmt.Errorf("grid %q: %q is not name=v1,v2,...", spec, part)
		}
		p := SweepParam{Name: strings.TrimSpace(name)}
		for _, v := range strings.Split(vals, ",") {
			x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return nil, fmt.Errorf("grid %q: %s value %q is not a number", spec, p.Name, v)
			}
			var probe env.TEGConfig
			if err := probe.Set(p.Name, x); err != nil {
				return nil, fmt.Errorf("grid %q: %w", spec, err)
			}
			p.Values = append(p.Values, x)
		}
		grid = append(grid, p)
	}
	if len(grid) == 0 {
		return nil, fmt.Errorf("grid %q has no parameters", spec)
	}
	return grid, nil
}

// SweepConfig is a grid search of a scheduler's TEG parameters.
type SweepConfig struct {
	Cluster   *env.Cluster
	Workload  func(seed uint64) (*env.Workload, error) // one workload per seed
	Scheduler string
	Base      env.TEGConfig // grid points change this
	Grid      []SweepParam
	Seeds     []uint64
	Sim       env.SimConfig // Seed and TEG are set per run
	Workers   int           // <= 0: runtime.GOMAXPROCS
	OnRun     func()        // called after each run (progress)
}

// SweepPoint is one grid point's parameters and its runs, one per seed.
type SweepPoint struct {
	Params []float64 // in Grid order
	Runs   []env.Metrics
}

// Objective is the mean per-tick reward over the point's seeds, the
// quantity the sweep maximises (docs/teg.md §9).
func (p *SweepPoint) Objective() (mean, std float64) {
	return p.metric(func(m env.Metrics) float64 { return m.RewardMean })
}

func (p *SweepPoint) metric(f func(env.Metrics) float64) (mean, std float64) {
	xs := make([]float64, len(p.Runs))
	for i, m := range p.Runs {
		xs[i] = f(m)
	}
	return MeanStd(xs)
}

// RunSweep runs every grid point on every seed (workloads built once per
// seed) and returns the points sorted by objective, best first; ties keep
// grid order. Results do not depend on Workers.
func RunSweep(ctx context.Context, cfg SweepConfig) ([]SweepPoint, error) {
	if cfg.Cluster == nil || cfg.Workload == nil || len(cfg.Seeds) == 0 || len(cfg.Grid) == 0 {
		return nil, fmt.Errorf("sweep: need a cluster, a workload, seeds and a grid")
	}
	if _, err := env.NewScheduler(cfg.Scheduler); err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	workloads := make([]*env.Workload, len(cfg.Seeds))
	for k, seed := range cfg.Seeds {
		w, err := cfg.Workload(seed)
		if err != nil {
			return nil, fmt.Errorf("sweep: workload of seed %d: %w", seed, err)
		}
		workloads[k] = w
	}
	// The grid's cartesian product, first axis slowest.
	points := []SweepPoint{{}}
	for _, ax := range cfg.Grid {
		var next []SweepPoint
		for _, p := range points {
			for _, v := range ax.Values {
				next = append(next, SweepPoint{Params: append(slices.Clone(p.Params), v)})
			}
		}
		points = next
	}
	for i := range points {
		points[i].Runs = make([]env.Metrics, len(cfg.Seeds))
	}
	n := len(points) * len(cfg.Seeds)
	err := ForEach(ctx, n, cfg.Workers, func(k int) error {
		pi, si := k/len(cfg.Seeds), k%len(cfg.Seeds)
		teg := cfg.Base
		for a, ax := range cfg.Grid {
			if err := teg.Set(ax.Name, points[pi].Params[a]); err != nil {
				return err
			}
		}
		sched, _ := env.NewScheduler(cfg.Scheduler)
		sc := cfg.Sim
		sc.Seed, sc.TEG = cfg.Seeds[si], &teg
		sim, err := env.NewSim(cfg.Cluster, workloads[si], sched, sc)
		if err != nil {
			return fmt.Errorf("sweep point %v seed %d: %w", points[pi].Params, cfg.Seeds[si], err)
		}
		points[pi].Runs[si] = sim.Run()
		if cfg.OnRun != nil {
			cfg.OnRun()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(points, func(a, b SweepPoint) int {
		ma, _ := a.Objective()
		mb, _ := b.Objective()
		switch {
		case ma > mb:
			return -1
		case ma < mb:
			return 1
		}
		return 0
	})
	return points, nil
}

// ForEach calls fn(0..n-1) on a pool of workers (<= 0: GOMAXPROCS) and
// returns the first error; it stops handing out work once ctx is done or a
// call failed. fn must only write state of its own index.
func ForEach(ctx context.Context, n, workers int, fn func(i int) error) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range min(workers, n) {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					cancel()
				}
			}
		})
	}
feed:
	for i := 0; i < n; i++ {
		if ctx.Err() != nil { // select alone may still pick the send
			break
		}
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// sweepColumns are the metrics shown per grid point besides the objective.
// Slowdown has three decimals: it sits near 1, where a hundredth is a
// percent.
var sweepColumns = []struct {
	name   string
	digits int
	f      func(env.Metrics) float64
}{
	{"SLA viol %", 2, func(m env.Metrics) float64 { return 100 * m.SLAViolationRate }},
	{"mean wait s", 2, func(m env.Metrics) float64 { return m.MeanWaitS }},
	{"slowdown", 3, func(m env.Metrics) float64 { return m.MeanSlowdown }},
	{"GPU util %", 2, func(m env.Metrics) float64 { return 100 * m.UtilGPU }},
	{"GPU frag %", 2, func(m env.Metrics) float64 { return 100 * m.GPUFragRate }},
	{"energy kWh", 2, func(m env.Metrics) float64 { return m.EnergyKWh }},
	{"migrations", 2, func(m env.Metrics) float64 { return float64(m.Migrations) }},
}

// WriteSweep writes the ranked grid as a text table (markdown false) or a
// Markdown table, top rows only when top > 0.
func WriteSweep(w io.Writer, grid []SweepParam, points []SweepPoint, top int, markdown bool) error {
	if top <= 0 || top > len(points) {
		top = len(points)
	}
	head := []string{"rank"}
	for _, ax := range grid {
		head = append(head, ax.Name)
	}
	head = append(head, "reward")
	for _, c := range sweepColumns {
		head = append(head, c.name)
	}
	rows := [][]string{head}
	for r, p := range points[:top] {
		row := []string{strconv.Itoa(r + 1)}
		for _, v := range p.Params {
			row = append(row, strconv.FormatFloat(v, 'g', -1, 64))
		}
		m, s := p.Objective()
		row = append(row, fmt.Sprintf("%.4f ± %.4f", m, s))
		for _, c := range sweepColumns {
			mean, _ := p.metric(c.f)
			row = append(row, strconv.FormatFloat(mean, 'f', c.digits, 64))
		}
		rows = append(rows, row)
	}
	if markdown {
		for i, row := range rows {
			if _, err := fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | ")); err != nil {
				return err
			}
			if i == 0 {
				seps := make([]string, len(row))
				for k := range seps {
					seps[k] = "---:"
				}
				if _, err := fmt.Fprintf(w, "|%s|\n", strings.Join(seps, "|")); err != nil {
					return err
				}
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	for _, row := range rows {
		fmt.Fprintf(tw, "%s\t\n", strings.Join(row, "\t"))
	}
	return tw.Flush()
}
