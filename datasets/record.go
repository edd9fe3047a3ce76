package datasets

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/tegrl/tegrl/env"
)

// Recorder is an env.Scheduler that wraps another and records each of its
// decisions as a transition: Decide captures the observation
// (Observation.FillTensors), asks the inner scheduler, and keeps the
// action. The transition stays open while the reward of the ticks after
// it accrues (AddReward); the next decision, or Finish, writes it. So a
// transition's reward is the reward from its decision until the next one,
// and at most one transition is held in memory.
//
// The recorder reports the inner scheduler's name and governor
// configuration (env.Governed), so that the simulation runs exactly as it
// would without it.
type Recorder struct {
	inner   env.Scheduler
	w       *TransitionsWriter
	t       env.Tensors // the live observation, refreshed at each decision
	open    Transition  // the last decision, awaiting its reward
	has     bool
	step    int64
	err     error
	runID   string
	episode int32
}

// Behaviour is implemented by a learned scheduler that can say, after
// Decide, what its policy made of the action it just returned: log π(a|o),
// its value estimate and the policy's version. The Recorder stores them in
// the transition; schedulers without it record zeros.
type Behaviour interface {
	LastBehaviour() (logp, value float32, version uint64)
}

// NewRecorder wraps inner, writing its transitions to w under the given
// run ID and episode.
func NewRecorder(inner env.Scheduler, w *TransitionsWriter, runID string, episode int32) *Recorder {
	return &Recorder{inner: inner, w: w, runID: runID, episode: episode}
}

// Name implements env.Scheduler: the inner scheduler's name.
func (r *Recorder) Name() string { return r.inner.Name() }

// Governor implements env.Governed: the inner scheduler's configuration,
// as env.GovernorFor gives it.
func (r *Recorder) Governor() env.TEGConfig { return env.GovernorFor(r.inner) }

// Decide implements env.Scheduler.
func (r *Recorder) Decide(obs *env.Observation, rng *rand.Rand) env.Action {
	// The open transition's observation views r.t's buffers: write it
	// before the refresh below rewrites them.
	r.flush()
	if !obs.FillTensors(&r.t) {
		// Outside a simulation there is nothing to record.
		return r.inner.Decide(obs, rng)
	}
	a := r.inner.Decide(obs, rng)
	jobID := int32(-1)
	if obs.Job != nil {
		jobID = int32(obs.Job.ID)
	}
	r.open = Transition{RunID: r.runID, Episode: r.episode, Step: r.step, Time: obs.Time, JobID: jobID, Action: a}
	if b, ok := r.inner.(Behaviour); ok {
		r.open.BehaviourLogp, r.open.Value, r.open.PolicyVersion = b.LastBehaviour()
	}
	viewTensors(&r.open.Obs, &r.t)
	r.has = true
	r.step++
	return a
}

// AddReward adds the reward of ticks after the last decision to it;
// reward before the first decision belongs to no transition and is
// dropped.
func (r *Recorder) AddReward(d env.RewardTerms) {
	if !r.has {
		return
	}
	o := &r.open.Reward
	o.Total += d.Total
	o.Success += d.Success
	o.Energy += d.Energy
	o.Latency += d.Latency
}

func (r *Recorder) flush() {
	if !r.has || r.err != nil {
		return
	}
	r.has = false
	if err := r.w.Append(&r.open); err != nil {
		r.err = err
	}
}

// Finish marks the last transition done and writes it.
func (r *Recorder) Finish() error {
	if r.has {
		r.open.Done = true
		r.flush()
	}
	return r.err
}

// Err returns the first write error: Decide cannot return one, so the run
// loop checks it after every step.
func (r *Recorder) Err() error { return r.err }

// Transitions is the number of decisions recorded so far.
func (r *Recorder) Transitions() int64 { return r.step }

// RecordConfig configures Record.
type RecordConfig struct {
	RunID   string
	Episode int32
	Sim     env.SimConfig
	Writer  WriterOptions
	// Progress, when set, is called after every step with the simulated
	// time.
	Progress func(now float64)
}

// RecordResult is what Record reports.
type RecordResult struct {
	Transitions int64       `json:"transitions"`
	Jobs        int         `json:"jobs"`
	Machines    int         `json:"machines"`
	Metrics     env.Metrics `json:"metrics"`
	Files       []string    `json:"files"`
}

// RecordRun runs workload w on cluster c under sched until the simulation
// is done, and writes into dir: transitions.arrow (one row per decision,
// streamed), jobs.arrow and machines.arrow (the run's inputs, so that the
// run can be replayed). The files are written under .partial names and
// renamed when complete.
func RecordRun(ctx context.Context, dir string, c *env.Cluster, w *env.Workload, sched env.Scheduler, cfg RecordConfig) (RecordResult, error) {
	res := RecordResult{Jobs: len(w.Jobs), Machines: len(c.Machines)}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, fmt.Errorf("record: %w", err)
	}
	mpath, jpath, tpath := filepath.Join(dir, MachinesFile), filepath.Join(dir, JobsFile), filepath.Join(dir, TransitionsFile)
	if err := WriteCluster(mpath, c, cfg.Writer); err != nil {
		return res, err
	}
	if err := WriteWorkload(jpath, w, cfg.Writer); err != nil {
		return res, err
	}
	tw, err := CreateTransitions(tpath, cfg.Writer)
	if err != nil {
		return res, err
	}
	n, m, err := Record(ctx, c, w, sched, cfg, tw)
	if err != nil {
		tw.Close()
		return res, err
	}
	if err := tw.Close(); err != nil {
		return res, err
	}
	res.Transitions, res.Metrics, res.Files = n, m, []string{mpath, jpath, tpath}
	return res, nil
}

// Record runs the simulation, writing one transition per decision to out
// (which it does not close). It returns the number of transitions and the
// run's metrics. The reward between decisions comes from
// env.Sim.Accrued, so ticks that the simulator skips while idle count too.
func Record(ctx context.Context, c *env.Cluster, w *env.Workload, sched env.Scheduler, cfg RecordConfig, out *TransitionsWriter) (int64, env.Metrics, error) {
	rec := NewRecorder(sched, out, cfg.RunID, cfg.Episode)
	sim, err := env.NewSim(c, w, rec, cfg.Sim)
	if err != nil {
		return 0, env.Metrics{}, fmt.Errorf("record: %w", err)
	}
	prev := sim.Accrued()
	for steps := 0; !sim.Done(); steps++ {
		if steps%256 == 0 {
			if err := ctx.Err(); err != nil {
				return rec.Transitions(), env.Metrics{}, fmt.Errorf("record: stopped at t=%.0f s: %w", sim.Now(), err)
			}
		}
		sim.Step()
		a := sim.Accrued()
		rec.AddReward(env.RewardTerms{Total: a.Total - prev.Total, Success: a.Success - prev.Success,
			Energy: a.Energy - prev.Energy, Latency: a.Latency - prev.Latency})
		prev = a
		if err := rec.Err(); err != nil {
			return rec.Transitions(), env.Metrics{}, fmt.Errorf("record: %w", err)
		}
		if cfg.Progress != nil {
			cfg.Progress(sim.Now())
		}
	}
	if err := rec.Finish(); err != nil {
		return rec.Transitions(), env.Metrics{}, fmt.Errorf("record: %w", err)
	}
	return rec.Transitions(), sim.Metrics(), nil
}
