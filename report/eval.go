package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/tegrl/tegrl/env"
)

// EvalRow is one scheduler's metrics averaged over held-out seeds (safety
// violations are summed): a row of tegrl train's and tegrl distill's
// held-out comparison.
type EvalRow struct {
	Scheduler        string  `json:"scheduler"`
	MeanSlowdown     float64 `json:"mean_slowdown"`
	MeanJCTS         float64 `json:"mean_jct_s"`
	SLAViolationRate float64 `json:"sla_violation_rate"`
	SafetyViolations int     `json:"safety_violations"`
	RewardMean       float64 `json:"reward_mean"`
	JobsCompleted    float64 `json:"jobs_completed"`
}

// EvalRowOf averages one scheduler's runs, one per seed.
func EvalRowOf(name string, runs []env.Metrics) EvalRow {
	row := EvalRow{Scheduler: name}
	n := float64(len(runs))
	for _, m := range runs {
		row.MeanSlowdown += m.MeanSlowdown / n
		row.MeanJCTS += m.MeanJCTS / n
		row.SLAViolationRate += m.SLAViolationRate / n
		row.SafetyViolations += m.SafetyViolations
		row.RewardMean += m.RewardMean / n
		row.JobsCompleted += float64(m.JobsCompleted) / n
	}
	return row
}

// PairedSlowdown is a policy's mean slowdown against a reference's,
// paired by seed.
type PairedSlowdown struct {
	RefSlowdown    float64 `json:"ref_mean_slowdown"`
	PolicySlowdown float64 `json:"policy_mean_slowdown"`
	DiffMean       float64 `json:"diff_mean"` // policy - reference
	CILow          float64 `json:"ci_low"`
	CIHigh         float64 `json:"ci_high"`
	RelChangePct   float64 `json:"rel_change_pct"`
	SLADiff        float64 `json:"sla_violation_diff"`
}

// BootstrapConfig sets a paired bootstrap: resamples, confidence level
// and the generator's seed (BootstrapMeanCI).
type BootstrapConfig struct {
	Resamples int
	Level     float64
	Seed      uint64
}

// PairSlowdown compares policy and ref, the runs of two schedulers on the
// same seeds in the same order: the difference of their mean slowdowns
// with a percentile bootstrap interval over the per-seed differences, the
// relative change and the difference of SLA violation rates.
func PairSlowdown(policy, ref []env.Metrics, bs BootstrapConfig) (PairedSlowdown, error) {
	if len(policy) != len(ref) {
		return PairedSlowdown{}, fmt.Errorf("paired slowdown: %d policy runs, %d reference runs", len(policy), len(ref))
	}
	n := len(policy)
	diffs := make([]float64, n)
	var sla float64
	for i := range diffs {
		diffs[i] = policy[i].MeanSlowdown - ref[i].MeanSlowdown
		sla += (policy[i].SLAViolationRate - ref[i].SLAViolationRate) / float64(n)
	}
	lo, hi, err := BootstrapMeanCI(diffs, bs.Resamples, bs.Level, bs.Seed)
	if err != nil {
		return PairedSlowdown{}, err
	}
	pr := PairedSlowdown{RefSlowdown: EvalRowOf("", ref).MeanSlowdown, PolicySlowdown: EvalRowOf("", policy).MeanSlowdown, CILow: lo, CIHigh: hi, SLADiff: sla}
	pr.DiffMean = pr.PolicySlowdown - pr.RefSlowdown
	pr.RelChangePct = 100 * pr.DiffMean / pr.RefSlowdown
	return pr, nil
}

// WriteEvalText writes the held-out comparison: a row per scheduler with
// the policy's paired difference against it where paired has one.
func WriteEvalText(w io.Writer, seeds []uint64, rows []EvalRow, paired map[string]PairedSlowdown) error {
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintf(w, "held-out seeds %s:\n", FormatSeeds(seeds))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scheduler\tslowdown\tJCT s\tSLA viol %\tsafety viol\tTEG reward\tpolicy - it (slowdown, 95% CI)\tchange\t")
	for _, r := range rows {
		vs, rel := "", ""
		if p, ok := paired[r.Scheduler]; ok {
			vs, rel = fmt.Sprintf("%+.3f [%+.3f, %+.3f]", p.DiffMean, p.CILow, p.CIHigh), fmt.Sprintf("%+.1f%%", p.RelChangePct)
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%.0f\t%.2f\t%d\t%.4f\t%s\t%s\t\n", r.Scheduler, r.MeanSlowdown, r.MeanJCTS, 100*r.SLAViolationRate, r.SafetyViolations, r.RewardMean, vs, rel)
	}
	return tw.Flush()
}
