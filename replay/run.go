package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/tegrl/tegrl/env"
)

// VerifyMode says whether Run compares a replay with the recording.
type VerifyMode int8

const (
	// VerifyAuto (the default) verifies when the scheduler's Name is the
	// recorded scheduler's.
	VerifyAuto VerifyMode = iota
	// VerifyAlways verifies whatever the scheduler.
	VerifyAlways
	// VerifyNever does not read the recorded decisions.
	VerifyNever
)

// Options configures Run.
type Options struct {
	Governor GovernorMode
	Verify   VerifyMode
	// KeepDecisions keeps every decision in Result.Decisions (Diff needs
	// them); otherwise only OnDecision sees them.
	KeepDecisions bool
	// OnDecision, when set, is called with each decision as it is made.
	OnDecision func(Decision)
	// Progress, when set, is called after every step with the simulated
	// time.
	Progress func(now float64)
}

// Result is a replay's outcome.
type Result struct {
	Scheduler string        `json:"scheduler"`
	Governor  string        `json:"governor"` // own or recorded (GovernorMode)
	TEG       env.TEGConfig `json:"-"`
	// NumDecisions counts the scheduler's decisions; Decisions holds them
	// with Options.KeepDecisions.
	NumDecisions int64       `json:"decisions"`
	Decisions    []Decision  `json:"-"`
	Metrics      env.Metrics `json:"metrics"`
	// MetricsJSON is json.Marshal(Metrics): the bytes compared with the
	// recording's.
	MetricsJSON  []byte       `json:"-"`
	Verification Verification `json:"verification"`
}

// Verification is the comparison of a replay with its recording.
type Verification struct {
	// Checked: the replay was compared with the recording (Options.Verify).
	Checked bool `json:"checked"`
	// Reproduced: every decision and the metrics JSON are identical.
	Reproduced bool `json:"reproduced"`
	// Identical counts the replayed decisions identical to the recorded
	// ones before the first divergence (all of them without one); Recorded
	// is the number of recorded decisions (-1 when unknown: no run.json).
	Identical int64 `json:"decisions_identical"`
	Recorded  int64 `json:"decisions_recorded"`
	// Divergence is the first decision that differs; nil when none does.
	Divergence *Divergence `json:"divergence"`
	// MetricsRecorded: the recording has its final metrics (run.json);
	// MetricsIdentical: the replay's metrics JSON equals them byte for
	// byte; MetricsDiffering lists the keys whose values differ.
	MetricsRecorded  bool     `json:"metrics_recorded"`
	MetricsIdentical bool     `json:"metrics_identical"`
	MetricsDiffering []string `json:"metrics_differing,omitempty"`
}

// Divergence reasons.
const (
	DivergedAction = "action"  // same step, time and job; another action
	DivergedJob    = "job"     // the step decided another job
	DivergedTime   = "time"    // the step came at another simulated time
	DivergedExtra  = "extra"   // the replay decided more often than the recording
	DivergedMissed = "missing" // the replay decided less often
)

// Divergence is the first step at which a replay's decision differs from
// the recorded one.
type Divergence struct {
	Step   int64  `json:"step"`
	Reason string `json:"reason"`
	// Recorded is nil when the replay decided more often than the
	// recording; Replayed when it decided less often.
	Recorded *Decision `json:"recorded"`
	Replayed *Decision `json:"replayed"`
}

func (d *Divergence) String() string {
	desc := func(x *Decision) string {
		return fmt.Sprintf("job %d at t=%g s: %s", x.JobID, x.TimeS, x.actionString())
	}
	switch {
	case d.Recorded == nil:
		return fmt.Sprintf("step %d: the replay made a decision the recording does not have (%s)", d.Step, desc(d.Replayed))
	case d.Replayed == nil:
		return fmt.Sprintf("step %d: the recording has a decision the replay did not make (%s)", d.Step, desc(d.Recorded))
	case d.Reason == DivergedAction:
		return fmt.Sprintf("step %d (job %d, t=%g s): recorded %s, replayed %s", d.Step, d.Recorded.JobID, d.Recorded.TimeS,
			d.Recorded.actionString(), d.Replayed.actionString())
	}
	return fmt.Sprintf("step %d: recorded %s; replayed %s", d.Step, desc(d.Recorded), desc(d.Replayed))
}

// checker compares replayed decisions with the recorded stream. After the
// first divergence it stops reading.
type checker struct {
	rec  *Recorded
	v    *Verification
	done bool // diverged or failed: compare no more
	err  error
}

func (c *checker) check(d *Decision) {
	if c.done {
		return
	}
	r, ok := c.rec.Next()
	if !ok {
		c.done = true
		if err := c.rec.Err(); err != nil {
			c.err = err
			return
		}
		dd := *d
		c.v.Divergence = &Divergence{Step: d.Step, Reason: DivergedExtra, Replayed: &dd}
		return
	}
	if r.Same(d) {
		c.v.Identical++
		return
	}
	c.done = true
	reason := DivergedAction
	switch {
	case r.JobID != d.JobID:
		reason = DivergedJob
	case r.TimeS != d.TimeS:
		reason = DivergedTime
	}
	dd := *d
	c.v.Divergence = &Divergence{Step: d.Step, Reason: reason, Recorded: &r, Replayed: &dd}
}

// finish looks for recorded decisions the replay did not make.
func (c *checker) finish(steps int64) {
	if c.done {
		return
	}
	c.done = true
	if r, ok := c.rec.Next(); ok {
		c.v.Divergence = &Divergence{Step: steps, Reason: DivergedMissed, Recorded: &r}
	} else if err := c.rec.Err(); err != nil {
		c.err = err
	}
}

// logger is the env.Scheduler a replay runs: it asks the scheduler, then
// logs and checks the decision. It reports the scheduler's name and
// governor, so that the simulation runs exactly as it would without it.
type logger struct {
	inner env.Scheduler
	step  int64
	chk   *checker
	keep  bool
	out   []Decision
	on    func(Decision)
}

func (l *logger) Name() string            { return l.inner.Name() }
func (l *logger) Governor() env.TEGConfig { return env.GovernorFor(l.inner) }

func (l *logger) Decide(obs *env.Observation, rng *rand.Rand) env.Action {
	a := l.inner.Decide(obs, rng)
	d := Decision{Step: l.step, TimeS: obs.Time, JobID: -1, Action: a}
	if obs.Job != nil {
		d.JobID = int32(obs.Job.ID)
	}
	l.step++
	if l.chk != nil {
		l.chk.check(&d)
	}
	if l.keep {
		l.out = append(l.out, d)
	}
	if l.on != nil {
		l.on(d)
	}
	return a
}

// Run replays the trace's workload on its cluster under sched (a fresh
// instance: schedulers keep per-run caches), with the recorded run's
// seed (hence its machine failures and random streams), tick, duration
// and limits, and the TEG configuration opt.Governor says. Each decision
// is logged and, when verifying, compared with the recorded one as the
// transitions file is streamed; the first divergence is reported in
// Result.Verification, the replay runs on to its end, and its metrics
// JSON is compared with the recording's byte for byte. An unreadable
// recorded batch stops the replay with an error.
func Run(ctx context.Context, t *Trace, sched env.Scheduler, opt Options) (*Result, error) {
	res := &Result{Scheduler: sched.Name(), Governor: opt.Governor.String(), TEG: t.TEGFor(sched, opt.Governor)}
	cfg := t.Config.Sim()
	cfg.TEG = &res.TEG
	l := &logger{inner: sched, keep: opt.KeepDecisions, on: opt.OnDecision}
	v := &res.Verification
	v.Recorded = t.Rows
	if opt.Verify == VerifyAlways || opt.Verify == VerifyAuto && sched.Name() == t.Config.Scheduler {
		rec, err := t.Decisions()
		if err != nil {
			return nil, err
		}
		defer rec.Close()
		v.Checked = true
		l.chk = &checker{rec: rec, v: v}
	}
	sim, err := env.NewSim(t.Cluster, t.Workload, l, cfg)
	if err != nil {
		return nil, fmt.Errorf("replay %s under %s: %w", t.Dir, sched.Name(), err)
	}
	for steps := 0; !sim.Done(); steps++ {
		if steps%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("replay %s under %s: stopped at t=%.0f s: %w", t.Dir, sched.Name(), sim.Now(), err)
			}
		}
		sim.Step()
		if l.chk != nil && l.chk.err != nil {
			return nil, fmt.Errorf("replay %s under %s: recorded decision %d: %w", t.Dir, sched.Name(), v.Identical, l.chk.err)
		}
		if opt.Progress != nil {
			opt.Progress(sim.Now())
		}
	}
	res.NumDecisions, res.Decisions = l.step, l.out
	res.Metrics = sim.Metrics()
	if res.MetricsJSON, err = json.Marshal(res.Metrics); err != nil {
		return nil, fmt.Errorf("replay %s under %s: metrics: %w", t.Dir, sched.Name(), err)
	}
	if l.chk == nil {
		return res, nil
	}
	l.chk.finish(l.step)
	if l.chk.err != nil {
		return nil, fmt.Errorf("replay %s under %s: recorded decision %d: %w", t.Dir, sched.Name(), v.Identical, l.chk.err)
	}
	if v.Divergence == nil && v.Recorded >= 0 && v.Identical != v.Recorded {
		// The transitions file and run.json disagree: Open checked that
		// they describe the same run, so one of them was altered.
		return nil, fmt.Errorf("replay %s: %d decisions in the transitions file, run.json counts %d", t.Dir, v.Identical, v.Recorded)
	}
	if t.RecordedMetrics != nil {
		v.MetricsRecorded = true
		v.MetricsIdentical = bytes.Equal(res.MetricsJSON, t.RecordedMetrics)
		if !v.MetricsIdentical {
			v.MetricsDiffering = differingKeys(t.RecordedMetrics, res.MetricsJSON)
		}
	}
	v.Reproduced = v.Divergence == nil && v.MetricsIdentical
	return res, nil
}

// differingKeys lists the top-level keys of two JSON objects whose values
// differ (in a's key order, then b's extra keys).
func differingKeys(a, b []byte) []string {
	ka, va := objectFields(a)
	kb, vb := objectFields(b)
	var out []string
	for _, k := range ka {
		if w, ok := vb[k]; !ok || !bytes.Equal(va[k], w) {
			out = append(out, k)
		}
	}
	for _, k := range kb {
		if _, ok := va[k]; !ok {
			out = append(out, k)
		}
	}
	if out == nil && !bytes.Equal(a, b) {
		out = []string{"(key order or formatting)"}
	}
	return out
}

// objectFields returns a JSON object's keys in order and their raw values.
func objectFields(b []byte) ([]string, map[string][]byte) {
	vals := map[string][]byte{}
	var keys []string
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, vals
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		k, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			break
		}
		keys = append(keys, k)
		vals[k] = raw
	}
	return keys, vals
}
