package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tegrl/tegrl/datasets"
	"github.com/tegrl/tegrl/report"
)

// TraceInfo describes a trace for reports.
type TraceInfo struct {
	Dir           string  `json:"dir"`
	Scheduler     string  `json:"scheduler"`
	SchedulerSpec string  `json:"scheduler_spec"`
	Seed          uint64  `json:"seed"`
	Machines      int     `json:"machines"`
	Jobs          int     `json:"jobs"`
	Workload      string  `json:"workload"`
	DurationS     float64 `json:"duration_s"`
	TickS         float64 `json:"tick_s"`
	MTBFS         float64 `json:"mtbf_s"`
	Decisions     int64   `json:"decisions"` // -1: unknown (no run.json)
	// PolicyChanged, when set, says that the policy file the recording
	// names is no longer the file recorded (its SHA-256 differs, or it is
	// gone).
	PolicyChanged string `json:"policy_changed,omitempty"`
}

// Info describes the trace.
func (t *Trace) Info() TraceInfo {
	c := &t.Config
	return TraceInfo{Dir: t.Dir, Scheduler: c.Scheduler, SchedulerSpec: c.SchedulerSpec, Seed: c.Seed, Machines: c.Machines,
		Jobs: c.Jobs, Workload: c.Workload, DurationS: c.DurationS, TickS: c.TickS, MTBFS: c.MTBFS, Decisions: t.Rows,
		PolicyChanged: policyChanged(c)}
}

// policyChanged compares the recorded policy file's SHA-256 with the file
// there now.
func policyChanged(c *datasets.RunConfig) string {
	if c.SchedulerSHA256 == "" {
		return ""
	}
	now, err := datasets.PolicyFileSHA256(c.SchedulerSpec)
	switch {
	case err != nil:
		return fmt.Sprintf("the policy file %s is gone (%v)", c.SchedulerSpec, err)
	case now != c.SchedulerSHA256:
		return fmt.Sprintf("the policy file %s changed since the recording (SHA-256 %s, recorded %s)", c.SchedulerSpec, short(now), short(c.SchedulerSHA256))
	}
	return ""
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}

// Report is what `tegrl replay` prints: the trace, the replay under the
// scheduler asked for, and with a second scheduler its replay ("other")
// and the comparison.
type Report struct {
	Trace  TraceInfo   `json:"trace"`
	Replay *Result     `json:"replay"`
	Other  *Result     `json:"other,omitempty"`
	Diff   *DiffResult `json:"diff,omitempty"`
}

// NewReport builds the report of a replay, or of a diff (res nil).
func NewReport(t *Trace, res *Result, diff *DiffResult) *Report {
	r := &Report{Trace: t.Info(), Replay: res, Diff: diff}
	if diff != nil {
		r.Replay, r.Other = diff.A, diff.B
	}
	return r
}

// Failure returns an error when a verified run did not reproduce the
// recording, naming the first divergence or the differing metrics, and a
// policy file changed since the recording.
func (r *Report) Failure() error {
	if err := r.failure(); err != nil && r.Trace.PolicyChanged != "" {
		return fmt.Errorf("%w; %s", err, r.Trace.PolicyChanged)
	} else if err != nil {
		return err
	}
	return nil
}

func (r *Report) failure() error {
	for _, res := range []*Result{r.Replay, r.Other} {
		if res == nil || !res.Verification.Checked || res.Verification.Reproduced {
			continue
		}
		v := &res.Verification
		switch {
		case v.Divergence != nil:
			return fmt.Errorf("replay under %s did not reproduce the recording: %s", res.Scheduler, v.Divergence)
		case !v.MetricsRecorded:
			return fmt.Errorf("replay under %s: the decisions match, but the recording has no metrics to compare (no %s)", res.Scheduler, "run.json")
		default:
			return fmt.Errorf("replay under %s did not reproduce the recording: every decision matches, but metrics differ: %s",
				res.Scheduler, strings.Join(v.MetricsDiffering, ", "))
		}
	}
	return nil
}

// WriteJSON writes the report as one JSON object on one line.
func (r *Report) WriteJSON(w io.Writer) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("replay report JSON: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteText writes the report for people.
func (r *Report) WriteText(w io.Writer) error {
	t := &r.Trace
	dec := "decisions unknown (no run.json)"
	if t.Decisions >= 0 {
		dec = fmt.Sprintf("%d decisions", t.Decisions)
	}
	failures := "no failures"
	if t.MTBFS > 0 {
		failures = "MTBF " + report.FormatNumber(t.MTBFS) + " s"
	}
	fmt.Fprintf(w, "trace       %s: %s, seed %d, %d machines, %d jobs (%s), %s s at %s s ticks, %s, %s\n",
		t.Dir, t.Scheduler, t.Seed, t.Machines, t.Jobs, t.Workload, report.FormatNumber(t.DurationS), report.FormatNumber(t.TickS), failures, dec)
	writeRun(w, "replay", r.Replay, t)
	if r.Other != nil {
		writeRun(w, "other", r.Other, t)
	}
	if r.Diff == nil {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "metric\t%s\t\n", r.Replay.Scheduler)
		m, err := metricMap(&r.Replay.Metrics)
		if err != nil {
			return err
		}
		for _, n := range report.MetricNames() {
			fmt.Fprintf(tw, "%s\t%s\t\n", n, report.FormatNumber(m[n]))
		}
		return tw.Flush()
	}
	return r.writeDiff(w)
}

func writeRun(w io.Writer, label string, res *Result, t *TraceInfo) {
	fmt.Fprintf(w, "%-11s %s under its %s governor: %d decisions\n", label, res.Scheduler, governorText(res.Governor), res.NumDecisions)
	v := &res.Verification
	switch {
	case !v.Checked:
		fmt.Fprintf(w, "%-11s not checked (the recording is %s's)\n", "reproduced", t.Scheduler)
	case v.Reproduced:
		fmt.Fprintf(w, "%-11s yes: %d of %d decisions identical, metrics JSON byte-identical\n", "reproduced", v.Identical, v.Recorded)
	default:
		var parts []string
		if v.Divergence != nil {
			parts = append(parts, fmt.Sprintf("%d decisions identical, then %s", v.Identical, v.Divergence))
		} else {
			parts = append(parts, fmt.Sprintf("all %d decisions identical", v.Identical))
		}
		switch {
		case !v.MetricsRecorded:
			parts = append(parts, "no recorded metrics to compare (no run.json)")
		case !v.MetricsIdentical:
			parts = append(parts, "metrics differ: "+strings.Join(v.MetricsDiffering, ", "))
		default:
			parts = append(parts, "metrics JSON byte-identical")
		}
		fmt.Fprintf(w, "%-11s NO: %s\n", "reproduced", strings.Join(parts, "; "))
	}
	if t.PolicyChanged != "" {
		fmt.Fprintf(w, "%-11s %s\n", "policy", t.PolicyChanged)
	}
}

func governorText(g string) string {
	if g == GovernorRecorded.String() {
		return "the recording's"
	}
	return "own"
}

func (r *Report) writeDiff(w io.Writer) error {
	d := r.Diff
	a, b := r.Replay.Scheduler, r.Other.Scheduler
	if a == b {
		a, b = "A", "B"
	}
	fmt.Fprintf(w, "decisions   %d aligned by job and occurrence, %d of them differ; %d made only by %s, %d only by %s\n",
		d.Aligned, d.Differing, d.OnlyA, a, d.OnlyB, b)
	if len(d.Differences) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "time_s\tjob\tocc\t%s\t%s\t\n", a, b)
		side := func(x *Decision) string {
			if x == nil {
				return "-"
			}
			return x.actionString()
		}
		for i := range d.Differences {
			x := &d.Differences[i]
			tm := report.FormatNumber(x.time())
			if x.A != nil && x.B != nil && x.A.TimeS != x.B.TimeS {
				tm = report.FormatNumber(x.A.TimeS) + "/" + report.FormatNumber(x.B.TimeS)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t\n", tm, x.JobID, x.Occurrence, side(x.A), side(x.B))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if total := d.Differing + d.OnlyA + d.OnlyB; int64(len(d.Differences)) < total {
			fmt.Fprintf(w, "(first %d of %d by time; --limit 0 lists all)\n", len(d.Differences), total)
		}
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "metric\tbetter\t%s (A)\t%s (B)\tB - A\tbetter run\t\n", r.Replay.Scheduler, r.Other.Scheduler)
	for _, m := range d.Metrics {
		better := m.Better
		if better == "" {
			better = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", m.Name, m.Direction, report.FormatNumber(m.A), report.FormatNumber(m.B), report.FormatNumber(m.Delta), better)
	}
	return tw.Flush()
}
