package replay

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
)

// DiffOptions configures Diff.
type DiffOptions struct {
	Governor GovernorMode
	Verify   VerifyMode
	// Limit keeps the first Limit differing decisions, by time (0: all);
	// the counts cover all of them.
	Limit int
	// Progress, when set, is called after every step of each run, from
	// its goroutine, with the run (0: A, 1: B) and its simulated time.
	Progress func(run int, now float64)
}

// DiffResult compares two schedulers on one trace. Its JSON leaves the
// two runs out (Report carries them as "replay" and "other").
type DiffResult struct {
	A *Result `json:"-"`
	B *Result `json:"-"`
	// Aligned counts the decisions made in both runs, matched by job and
	// occurrence (the k-th time each run decided for that job); Differing
	// those of them whose actions differ. OnlyA and OnlyB count the
	// decisions one run made and the other did not (a job offered more
	// often, or never).
	Aligned   int64 `json:"aligned"`
	Differing int64 `json:"differing"`
	OnlyA     int64 `json:"only_a"`
	OnlyB     int64 `json:"only_b"`
	// Differences lists differing and unmatched decisions by time (the
	// earlier of the two), then job and occurrence; the first
	// DiffOptions.Limit of them.
	Differences []DecisionDiff `json:"differences"`
	// Metrics compares every numeric metric of env.Metrics.
	Metrics []MetricDelta `json:"metrics"`
}

// DecisionDiff is one job's Occurrence-th decision in both runs; A or B
// is nil when that run did not make it.
type DecisionDiff struct {
	JobID      int32     `json:"job_id"`
	Occurrence int32     `json:"occurrence"` // from 0
	A          *Decision `json:"a"`
	B          *Decision `json:"b"`
}

// time is the earlier of the two decisions' times.
func (d *DecisionDiff) time() float64 {
	switch {
	case d.A == nil:
		return d.B.TimeS
	case d.B == nil:
		return d.A.TimeS
	}
	return math.Min(d.A.TimeS, d.B.TimeS)
}

func compareDiffs(x, y DecisionDiff) int {
	if c := cmp.Compare(x.time(), y.time()); c != 0 {
		return c
	}
	if c := cmp.Compare(x.JobID, y.JobID); c != 0 {
		return c
	}
	return cmp.Compare(x.Occurrence, y.Occurrence)
}

// MetricDelta is one metric of both runs: A, B, B - A, the direction in
// which it is better (report.MetricDirection) and which run is better
// ("A", "B", or "" when neutral or equal to 1e-9 relative: rounding).
type MetricDelta struct {
	Name      string           `json:"name"`
	A         float64          `json:"a"`
	B         float64          `json:"b"`
	Delta     float64          `json:"b_minus_a"`
	Direction report.Direction `json:"direction"`
	Better    string           `json:"better_run"`
}

// Diff replays the trace under a and b (fresh, distinct instances),
// concurrently, and compares their decisions and metrics.
func Diff(ctx context.Context, t *Trace, a, b env.Scheduler, opt DiffOptions) (*DiffResult, error) {
	opts := func(run int) Options {
		o := Options{Governor: opt.Governor, Verify: opt.Verify, KeepDecisions: true}
		if opt.Progress != nil {
			o.Progress = func(now float64) { opt.Progress(run, now) }
		}
		return o
	}
	var ra, rb *Result
	var ea, eb error
	var wg sync.WaitGroup
	wg.Go(func() { ra, ea = Run(ctx, t, a, opts(0)) })
	rb, eb = Run(ctx, t, b, opts(1))
	wg.Wait()
	if ea != nil {
		return nil, fmt.Errorf("diff, run A: %w", ea)
	}
	if eb != nil {
		return nil, fmt.Errorf("diff, run B: %w", eb)
	}
	res := alignDecisions(ra.Decisions, rb.Decisions, opt.Limit)
	res.A, res.B = ra, rb
	var err error
	if res.Metrics, err = metricDeltas(&ra.Metrics, &rb.Metrics); err != nil {
		return nil, err
	}
	return res, nil
}

// occKey identifies a job's k-th decision.
func occKey(job int32, k int32) uint64 { return uint64(uint32(job))<<32 | uint64(uint32(k)) }

// alignDecisions matches the decisions of two runs by (job, occurrence)
// and lists the differences, keeping the first limit by time.
func alignDecisions(da, db []Decision, limit int) *DiffResult {
	res := &DiffResult{Differences: []DecisionDiff{}}
	index := make(map[uint64]int32, len(da))
	occ := map[int32]int32{}
	occA := make([]int32, len(da))
	for i := range da {
		k := occ[da[i].JobID]
		occ[da[i].JobID] = k + 1
		occA[i] = k
		index[occKey(da[i].JobID, k)] = int32(i)
	}
	matched := make([]bool, len(da))
	clear(occ)
	keep := func(d DecisionDiff) {
		res.Differences = append(res.Differences, d)
		// Trim now and then rather than hold every difference of a long
		// run: sorting 2·limit items each limit additions costs
		// O(log limit) per difference.
		if limit > 0 && len(res.Differences) >= 2*limit {
			slices.SortFunc(res.Differences, compareDiffs)
			res.Differences = res.Differences[:limit]
		}
	}
	for i := range db {
		d := &db[i]
		k := occ[d.JobID]
		occ[d.JobID] = k + 1
		j, ok := index[occKey(d.JobID, k)]
		if !ok {
			res.OnlyB++
			keep(DecisionDiff{JobID: d.JobID, Occurrence: k, B: d})
			continue
		}
		matched[j] = true
		res.Aligned++
		if !sameAction(&da[j].Action, &d.Action) {
			res.Differing++
			keep(DecisionDiff{JobID: d.JobID, Occurrence: k, A: &da[j], B: d})
		}
	}
	for i := range da {
		if !matched[i] {
			res.OnlyA++
			keep(DecisionDiff{JobID: da[i].JobID, Occurrence: occA[i], A: &da[i]})
		}
	}
	slices.SortFunc(res.Differences, compareDiffs)
	if limit > 0 && len(res.Differences) > limit {
		res.Differences = res.Differences[:limit]
	}
	return res
}

// metricDeltas compares every numeric metric (report.MetricNames, in
// env.Metrics order) of a and b.
func metricDeltas(a, b *env.Metrics) ([]MetricDelta, error) {
	va, err := metricMap(a)
	if err != nil {
		return nil, err
	}
	vb, err := metricMap(b)
	if err != nil {
		return nil, err
	}
	names := report.MetricNames()
	out := make([]MetricDelta, 0, len(names))
	for _, n := range names {
		d := MetricDelta{Name: n, A: va[n], B: vb[n], Delta: vb[n] - va[n], Direction: report.MetricDirection(n)}
		switch {
		case d.Direction == report.Neutral || math.Abs(d.Delta) <= 1e-9*math.Max(math.Abs(d.A), math.Abs(d.B)):
			// Equal, or a difference of rounding (sums in another
			// order): no run is better.
		case (d.Delta > 0) == (d.Direction == report.HigherBetter):
			d.Better = "B"
		default:
			d.Better = "A"
		}
		out = append(out, d)
	}
	return out, nil
}

// metricMap returns a Metrics' numeric fields by JSON key.
func metricMap(m *env.Metrics) (map[string]float64, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("diff: metrics: %w", err)
	}
	var all map[string]any
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, fmt.Errorf("diff: metrics: %w", err)
	}
	out := make(map[string]float64, len(all))
	for k, v := range all {
		if f, ok := v.(float64); ok {
			out[k] = f
		}
	}
	return out, nil
}

// Evaluate replays t under a, or with b set compares a and b on it (Diff
// with opt), and returns the report tegrl replay prints. Progress, when
// set, is told of each run's simulated time (run 0: a, 1: b).
func Evaluate(ctx context.Context, t *Trace, a, b env.Scheduler, opt DiffOptions) (*Report, error) {
	if b != nil {
		d, err := Diff(ctx, t, a, b, opt)
		if err != nil {
			return nil, err
		}
		return NewReport(t, nil, d), nil
	}
	ro := Options{Governor: opt.Governor, Verify: opt.Verify}
	if p := opt.Progress; p != nil {
		ro.Progress = func(now float64) { p(0, now) }
	}
	res, err := Run(ctx, t, a, ro)
	if err != nil {
		return nil, err
	}
	return NewReport(t, res, nil), nil
}
