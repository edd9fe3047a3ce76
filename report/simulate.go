package report

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/tegrl/tegrl/env"
)

// SimulateConfig is one workload run under several schedulers, as tegrl
// simulate runs it.
type SimulateConfig struct {
	Cluster  *env.Cluster
	Workload *env.Workload
	Sim      env.SimConfig // without its TEG part
	New      []func() env.Scheduler
	// TEG is the configuration of a scheduler's run (nil: its governor).
	TEG     func(env.Scheduler) (env.TEGConfig, error)
	Workers int    // runs at once (<= 0: GOMAXPROCS)
	OnRun   func() // called after each run, from any goroutine
}

// Simulate runs every scheduler on the same cluster and workload in
// parallel and returns their metrics in the order of cfg.New; the result
// does not depend on Workers.
func Simulate(ctx context.Context, cfg SimulateConfig) ([]env.Metrics, error) {
	out := make([]env.Metrics, len(cfg.New))
	err := ForEach(ctx, len(cfg.New), cfg.Workers, func(k int) error {
		sched := cfg.New[k]()
		teg := env.GovernorFor(sched)
		if cfg.TEG != nil {
			var err error
			if teg, err = cfg.TEG(sched); err != nil {
				return err
			}
		}
		run := cfg.Sim
		run.TEG = &teg
		sim, err := env.NewSim(cfg.Cluster, cfg.Workload, sched, run)
		if err != nil {
			return err
		}
		out[k] = sim.Run()
		if cfg.OnRun != nil {
			cfg.OnRun()
		}
		return nil
	})
	return out, err
}

// WriteMetricsTable writes one aligned row of metrics per run.
func WriteMetricsTable(out io.Writer, ms []env.Metrics) error {
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scheduler\tdone/submitted\tfailed\tmean JCT s\tp95 JCT s\tslowdown\tmean wait s\tSLA viol %\tCPU %\tGPU %\tGPU frag %\tenergy kWh\tstarved\tmigrations\tOOM\tsafety viol\treward\t")
	for _, m := range ms {
		fmt.Fprintf(tw, "%s\t%d/%d\t%d\t%.0f\t%.0f\t%.2f\t%.1f\t%.2f\t%.1f\t%.1f\t%.1f\t%.0f\t%d\t%d\t%d\t%d\t%.3f\t\n",
			m.Scheduler, m.JobsCompleted, m.JobsSubmitted, m.JobsFailed, m.MeanJCTS, m.P95JCTS, m.MeanSlowdown,
			m.MeanWaitS, 100*m.SLAViolationRate, 100*m.UtilCPU, 100*m.UtilGPU, 100*m.GPUFragRate, m.EnergyKWh, m.StarvedJobs,
			m.Migrations, m.OOMKills, m.SafetyViolations, m.RewardMean)
	}
	return tw.Flush()
}
