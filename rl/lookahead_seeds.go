package rl

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
)

// LookaheadSeed is one seed's result of LookaheadSeeds (a line of tegrl
// lookahead --json).
type LookaheadSeed struct {
	Seed         uint64  `json:"seed"`
	Decisions    int     `json:"decisions"`
	Evaluated    int     `json:"evaluated"`
	Changed      int     `json:"changed"`
	Rollouts     int     `json:"rollouts"`
	BaseSlowdown float64 `json:"base_mean_slowdown"`
	LookSlowdown float64 `json:"lookahead_mean_slowdown"`
	BaseAccrued  float64 `json:"base_accrued_slowdown"`
	LookAccrued  float64 `json:"lookahead_accrued_slowdown"`
	BaseSLA      float64 `json:"base_sla_violation_rate"`
	LookSLA      float64 `json:"lookahead_sla_violation_rate"`
}

// LookaheadSeeds runs Lookahead with la's Every, Candidates and Support on
// each seed's episode (build gives its cluster, workload and run), in
// seed order in the result. Seeds run in parallel first; the workers left
// over run each seed's rollouts. The result does not depend on workers.
func LookaheadSeeds(ctx context.Context, build func(seed uint64) (*env.Cluster, *env.Workload, env.SimConfig, error),
	base func() env.Scheduler, seeds []uint64, la LookaheadConfig, workers int) ([]LookaheadSeed, error) {
	rows := make([]LookaheadSeed, len(seeds))
	seedWorkers := min(workers, len(seeds))
	rollWorkers := max(1, workers/max(seedWorkers, 1))
	err := report.ForEach(ctx, len(seeds), seedWorkers, func(i int) error {
		c, w, cfg, err := build(seeds[i])
		if err != nil {
			return err
		}
		lc := la
		lc.Base, lc.Seed, lc.Workers = base, seeds[i], rollWorkers
		res, err := Lookahead(ctx, c, w, cfg, lc)
		if err != nil {
			return fmt.Errorf("seed %d: %w", seeds[i], err)
		}
		rows[i] = LookaheadSeed{Seed: seeds[i], Decisions: res.Decisions, Evaluated: res.Evaluated, Changed: res.Changed, Rollouts: res.Rollouts,
			BaseSlowdown: res.Base.MeanSlowdown, LookSlowdown: res.Lookahead.MeanSlowdown,
			BaseAccrued: res.BaseAccrued, LookAccrued: res.LookaheadAccrued,
			BaseSLA: res.Base.SLAViolationRate, LookSLA: res.Lookahead.SLAViolationRate}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// WriteLookaheadTable writes one aligned row per seed, and their mean when
// there are several; base names the base scheduler in the header.
func WriteLookaheadTable(out io.Writer, base string, rows []LookaheadSeed) error {
	tw := tabwriter.NewWriter(out, 2, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "seed\tdecisions\tevaluated\tchanged\t%s slowdown\tlookahead slowdown\tdiff\taccrued %s\taccrued lookahead\tdiff\t\n", base, base)
	var sb, sl float64
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%.4f\t%.4f\t%+.2f%%\t%.1f\t%.1f\t%+.2f%%\t\n", r.Seed, r.Decisions, r.Evaluated, r.Changed,
			r.BaseSlowdown, r.LookSlowdown, 100*(r.LookSlowdown/r.BaseSlowdown-1), r.BaseAccrued, r.LookAccrued, 100*(r.LookAccrued/r.BaseAccrued-1))
		sb += r.BaseSlowdown
		sl += r.LookSlowdown
	}
	if len(rows) > 1 {
		n := float64(len(rows))
		fmt.Fprintf(tw, "mean\t\t\t\t%.4f\t%.4f\t%+.2f%%\t\t\t\t\n", sb/n, sl/n, 100*(sl/sb-1))
	}
	return tw.Flush()
}
