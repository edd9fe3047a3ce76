package report

import (
	"context"
	"fmt"
	"io"

	"github.com/tegrl/tegrl/env"
)

// TuneConfig is tegrl tune's grid search: one scheduler on the synthetic
// workload of a cluster, every grid point on every seed.
type TuneConfig struct {
	Cluster   *env.Cluster
	Scheduler string
	Base      env.TEGConfig // what the grid's points change
	Grid      []SweepParam
	Seeds     []uint64
	Load      float64 // offered load of the synthetic workload
	Duration  float64 // simulated seconds per run (also the workload's horizon)
	Workers   int
	OnRun     func()
}

// Runs is the number of simulations Tune runs.
func (c TuneConfig) Runs() int {
	n := len(c.Seeds)
	for _, ax := range c.Grid {
		n *= len(ax.Values)
	}
	return n
}

// Tune runs the grid search and returns its points, ranked as RunSweep
// ranks them.
func Tune(ctx context.Context, c TuneConfig) ([]SweepPoint, error) {
	wcfg := env.DefaultWorkload
	wcfg.Load, wcfg.Horizon = c.Load, c.Duration
	return RunSweep(ctx, SweepConfig{
		Cluster:   c.Cluster,
		Workload:  func(seed uint64) (*env.Workload, error) { return env.NewSyntheticWorkload(c.Cluster, wcfg, seed) },
		Scheduler: c.Scheduler,
		Base:      c.Base,
		Grid:      c.Grid,
		Seeds:     c.Seeds,
		Sim:       env.SimConfig{Duration: c.Duration},
		Workers:   c.Workers,
		OnRun:     c.OnRun,
	})
}

// WriteSweepMarkdown writes the ranked table in Markdown under the command
// line that made it.
func WriteSweepMarkdown(w io.Writer, commandLine string, grid []SweepParam, points []SweepPoint) error {
	fmt.Fprintf(w, "Command:\n\n```sh\n%s\n```\n\n", commandLine)
	return WriteSweep(w, grid, points, 0, true)
}
