package datasets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

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
	cut     env.Tensors // r.t with its job rows cut to MaxJobRows
	cutBuf  [env.NumRelations]env.Edges
	// maxBytes caps the rows' bytes (TransitionsWriter.Bytes); 0: no cap.
	// last is the size of the last row written, the estimate of the next.
	maxBytes, last int64
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
	if r.t.Jobs > MaxJobRows {
		cutJobRows(&r.cut, &r.t, MaxJobRows, &r.cutBuf)
		viewTensors(&r.open.Obs, &r.cut)
	}
	r.has = true
	r.step++
	return a
}

// MaxJobRows bounds the job rows of a recorded observation: the pending
// job's row (row 0) and the running jobs' rows after it, in the
// observation's order (by machine index), of which rows from MaxJobRows
// on are left out with their runs-on edges. Every other part of a row
// grows with the cluster only, so a row is bounded by the cluster's size
// however many jobs pile up (a cluster without GPUs under GPU jobs).
// obs_jobs holds the count recorded, so a reader sees a consistent
// observation of MaxJobRows jobs.
const MaxJobRows = 512

// cutJobRows sets dst to src with only its first k job rows: the job
// features and IDs are views of src's, the edges that touch a job are
// copied into buf without those of the rows left out.
func cutJobRows(dst, src *env.Tensors, k int, buf *[env.NumRelations]env.Edges) {
	viewTensors(dst, src)
	dst.Jobs = k
	dst.Job, dst.JobID = src.Job[:k*env.JobFeatures], src.JobID[:k]
	for r := env.Relation(0); r < env.NumRelations; r++ {
		na, nb := r.Nodes()
		if na != env.NodeJob && nb != env.NodeJob {
			continue
		}
		se, de := &src.Edges[r], &buf[r]
		de.Src, de.Dst, de.Feat = de.Src[:0], de.Dst[:0], de.Feat[:0]
		f := env.EdgeFeatures(r)
		for i := range se.Src {
			if na == env.NodeJob && int(se.Src[i]) >= k || nb == env.NodeJob && int(se.Dst[i]) >= k {
				continue
			}
			de.Src, de.Dst = append(de.Src, se.Src[i]), append(de.Dst, se.Dst[i])
			de.Feat = append(de.Feat, se.Feat[i*f:(i+1)*f]...)
		}
		dst.Edges[r] = *de
	}
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
	before := r.w.Bytes()
	if r.maxBytes > 0 && before+r.last > r.maxBytes {
		// The row that would cross the cap is not written: the file
		// ends on the last whole row under it.
		r.err = fmt.Errorf("%w of %d bytes after %d transitions (%d bytes of rows)", ErrMaxBytes, r.maxBytes, r.w.Rows(), before)
		return
	}
	r.has = false
	if err := r.w.Append(&r.open); err != nil {
		r.err = err
	}
	r.last = r.w.Bytes() - before
}

// ErrMaxBytes is the error of a recording stopped at its size cap
// (RecordConfig.MaxBytes). The transitions written until then form a
// valid file.
var ErrMaxBytes = errors.New("stopped at the size cap")

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
	// SchedulerSpec is how the scheduler was named to the caller (a
	// built-in name or a policy file's path); RecordRun stores it in the
	// run configuration so that a replay can build the scheduler again.
	// Empty means the scheduler's Name.
	SchedulerSpec string
	// Progress, when set, is called after every step with the simulated
	// time.
	Progress func(now float64)
	// MaxBytes caps the transitions' size (TransitionsWriter.Bytes, within
	// one row and the file's few kilobytes of framing): the recording
	// stops with ErrMaxBytes before the row that would cross it. 0: no
	// cap.
	MaxBytes int64
}

// RecordResult is what Record reports.
type RecordResult struct {
	Transitions int64       `json:"transitions"`
	Jobs        int         `json:"jobs"`
	Machines    int         `json:"machines"`
	Metrics     env.Metrics `json:"metrics"`
	Files       []string    `json:"files"`
}

// RunFile is the file RecordRun writes next to transitions.arrow when the
// run is over: a RunSummary as one line of JSON.
const RunFile = "run.json"

// MetaRun is the schema metadata key of a transitions file written by
// RecordRun: its RunConfig as JSON. It has no "tegrl." prefix on purpose:
// readers refuse reserved keys they do not know, and files that carry it
// must stay readable by readers built before it existed.
const MetaRun = "record.run"

// RunConfigVersion is the version of the RunConfig layout; a replay
// refuses any other.
const RunConfigVersion = 1

// RunConfig is what a recorded run needs, beyond its cluster
// (machines.arrow) and workload (jobs.arrow), to be run again exactly:
// the simulator's configuration with every default resolved, the TEG
// configuration the run used, and the scheduler. Package replay reads it.
type RunConfig struct {
	Version int `json:"version"`
	// Scheduler is the scheduler's Name; SchedulerSpec is how it was
	// given (a built-in name or a policy file).
	Scheduler     string `json:"scheduler"`
	SchedulerSpec string `json:"scheduler_spec"`
	// SchedulerSHA256 is the SHA-256 of the policy file SchedulerSpec
	// names, when it names one, so that a replay can tell a retrained
	// file from the recorded one.
	SchedulerSHA256 string `json:"scheduler_sha256,omitempty"`
	RunID           string `json:"run_id"`
	Episode         int32  `json:"episode"`

	Seed         uint64  `json:"seed"`
	TickS        float64 `json:"tick_s"`
	DurationS    float64 `json:"duration_s"` // 0: until the workload drains
	MaxTicks     int     `json:"max_ticks"`
	MTBFS        float64 `json:"mtbf_s"` // negative: no failures
	MTTRS        float64 `json:"mttr_s"`
	ScanLimit    int     `json:"scan_limit"`
	StarveAfterS float64 `json:"starve_after_s"`
	MaxRestarts  int     `json:"max_restarts"`
	FragEvery    int     `json:"frag_every"`
	// TEG is the configuration the run used; Governor is the scheduler's
	// own (env.GovernorFor). Where they differ, the caller overrode the
	// scheduler's defaults (tegrl's --safety, --moves... flags), and a
	// replay under another scheduler applies the same overrides to that
	// scheduler's governor. Fields are env.TEGConfig's, by Go name.
	TEG      env.TEGConfig `json:"teg"`
	Governor env.TEGConfig `json:"governor"`

	// The run's inputs, to check that the files beside it belong to it.
	Machines int    `json:"machines"`
	Jobs     int    `json:"jobs"`
	Workload string `json:"workload"`
}

// Sim returns the simulator configuration of the run (series off).
func (r *RunConfig) Sim() env.SimConfig {
	teg := r.TEG
	return env.SimConfig{Seed: r.Seed, Tick: r.TickS, Duration: r.DurationS, MaxTicks: r.MaxTicks, MTBF: r.MTBFS, MTTR: r.MTTRS,
		ScanLimit: r.ScanLimit, StarveAfter: r.StarveAfterS, MaxRestarts: r.MaxRestarts, FragEvery: r.FragEvery, TEG: &teg}
}

// NewRunConfig describes a run of w on c under sched with cfg, resolving
// every default of cfg.Sim (env.DefaultSimConfig, and the scheduler's
// governor when cfg.Sim.TEG is nil) so that a replay does not depend on
// the defaults of the build that replays it.
func NewRunConfig(c *env.Cluster, w *env.Workload, sched env.Scheduler, cfg RecordConfig) RunConfig {
	s, d := cfg.Sim, env.DefaultSimConfig
	or := func(v, def float64) float64 {
		if v == 0 {
			return def
		}
		return v
	}
	orInt := func(v, def int) int {
		if v == 0 {
			return def
		}
		return v
	}
	gov := env.GovernorFor(sched)
	teg := gov
	if s.TEG != nil {
		teg = *s.TEG
	}
	spec := cfg.SchedulerSpec
	if spec == "" {
		spec = sched.Name()
	}
	sum, _ := PolicyFileSHA256(spec) // "" for a built-in name
	return RunConfig{
		Version: RunConfigVersion, Scheduler: sched.Name(), SchedulerSpec: spec, SchedulerSHA256: sum, RunID: cfg.RunID, Episode: cfg.Episode,
		Seed: s.Seed, TickS: or(s.Tick, d.Tick), DurationS: s.Duration, MaxTicks: orInt(s.MaxTicks, d.MaxTicks),
		MTBFS: or(s.MTBF, d.MTBF), MTTRS: or(s.MTTR, d.MTTR), ScanLimit: orInt(s.ScanLimit, d.ScanLimit),
		StarveAfterS: or(s.StarveAfter, d.StarveAfter), MaxRestarts: orInt(s.MaxRestarts, d.MaxRestarts),
		FragEvery: orInt(s.FragEvery, d.FragEvery), TEG: teg, Governor: gov,
		Machines: len(c.Machines), Jobs: len(w.Jobs), Workload: w.Name,
	}
}

// RunSummary is the content of run.json: the run's configuration (the
// same as the transitions file's MetaRun), its decision count and its
// final metrics.
type RunSummary struct {
	Run         RunConfig   `json:"run"`
	Transitions int64       `json:"transitions"`
	Metrics     env.Metrics `json:"metrics"`
}

// RecordRun runs workload w on cluster c under sched until the simulation
// is done, and writes into dir: transitions.arrow (one row per decision,
// streamed; its schema metadata holds the RunConfig under MetaRun),
// jobs.arrow and machines.arrow (the run's inputs), and when the run is
// over run.json (RunSummary: the configuration again and the final
// metrics), so that package replay can run it again and check the
// result. The files are written under .partial names and renamed when
// complete.
//
// A recording stopped early, by ctx (a signal) or at cfg.MaxBytes, still
// closes transitions.arrow as a valid file holding every row written
// until the stop, and returns the error with the result so far; it
// writes no run.json, since a partial run cannot be replayed.
func RecordRun(ctx context.Context, dir string, c *env.Cluster, w *env.Workload, sched env.Scheduler, cfg RecordConfig) (RecordResult, error) {
	res := RecordResult{Jobs: len(w.Jobs), Machines: len(c.Machines)}
	run := NewRunConfig(c, w, sched, cfg)
	runJSON, err := json.Marshal(run)
	if err != nil {
		return res, fmt.Errorf("record: run configuration: %w", err)
	}
	topt := cfg.Writer
	if _, ok := topt.Metadata[MetaRun]; ok {
		return res, fmt.Errorf("record: metadata key %q is RecordRun's own", MetaRun)
	}
	topt.Metadata = make(map[string]string, len(cfg.Writer.Metadata)+1)
	for k, v := range cfg.Writer.Metadata {
		topt.Metadata[k] = v
	}
	topt.Metadata[MetaRun] = string(runJSON)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, fmt.Errorf("record: %w", err)
	}
	mpath, jpath, tpath := filepath.Join(dir, MachinesFile), filepath.Join(dir, JobsFile), filepath.Join(dir, TransitionsFile)
	rpath := filepath.Join(dir, RunFile)
	// A run.json left by an earlier recording into dir would describe
	// the wrong run if this one fails.
	if err := os.Remove(rpath); err != nil && !os.IsNotExist(err) {
		return res, fmt.Errorf("record: %w", err)
	}
	if err := WriteCluster(mpath, c, cfg.Writer); err != nil {
		return res, err
	}
	if err := WriteWorkload(jpath, w, cfg.Writer); err != nil {
		return res, err
	}
	tw, err := CreateTransitions(tpath, topt)
	if err != nil {
		return res, err
	}
	n, m, err := Record(ctx, c, w, sched, cfg, tw)
	if err != nil {
		stopped := errors.Is(err, ErrMaxBytes) || ctx.Err() != nil
		if cerr := tw.Close(); cerr != nil || !stopped {
			return res, errors.Join(err, cerr)
		}
		res.Transitions, res.Files = tw.Rows(), []string{mpath, jpath, tpath}
		return res, fmt.Errorf("%w: %s holds %d whole transitions; no %s (a partial run cannot be replayed)", err, tpath, res.Transitions, RunFile)
	}
	if err := tw.Close(); err != nil {
		return res, err
	}
	if err := writeRunSummary(rpath, &RunSummary{Run: run, Transitions: n, Metrics: m}); err != nil {
		return res, err
	}
	res.Transitions, res.Metrics, res.Files = n, m, []string{mpath, jpath, tpath, rpath}
	return res, nil
}

// writeRunSummary writes s as one line of JSON to path+".partial" and
// renames it to path.
func writeRunSummary(path string, s *RunSummary) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("record: %s: %w", RunFile, err)
	}
	tmp := path + ".partial"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

// Record runs the simulation, writing one transition per decision to out
// (which it does not close). It returns the number of transitions and the
// run's metrics. The reward between decisions comes from
// env.Sim.Accrued, so ticks that the simulator skips while idle count too.
func Record(ctx context.Context, c *env.Cluster, w *env.Workload, sched env.Scheduler, cfg RecordConfig, out *TransitionsWriter) (int64, env.Metrics, error) {
	rec := NewRecorder(sched, out, cfg.RunID, cfg.Episode)
	rec.maxBytes = cfg.MaxBytes
	sim, err := env.NewSim(c, w, rec, cfg.Sim)
	if err != nil {
		return 0, env.Metrics{}, fmt.Errorf("record: %w", err)
	}
	prev := sim.Accrued()
	done := ctx.Done()
	for !sim.Done() {
		// Checked at every step (a tick: milliseconds), so that a signal
		// closes the file promptly.
		select {
		case <-done:
			// The open transition is whole up to here: keep it (not
			// done: the episode did not end).
			rec.flush()
			return rec.Transitions(), env.Metrics{}, fmt.Errorf("record: stopped at t=%.0f s: %w", sim.Now(), ctx.Err())
		default:
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

// PolicyFileSHA256 returns the hex SHA-256 of the policy file spec names
// (NAME.safetensors, or a folder holding policy.safetensors), or "" with
// no error when spec names no file (a built-in scheduler).
func PolicyFileSHA256(spec string) (string, error) {
	path := spec
	if st, err := os.Stat(spec); err == nil && st.IsDir() {
		path = filepath.Join(spec, "policy.safetensors")
	} else if err != nil {
		if strings.HasSuffix(spec, ".safetensors") {
			return "", fmt.Errorf("policy file %s: %w", spec, err)
		}
		return "", nil
	}
	if _, err := os.Stat(path); err != nil {
		return "", nil
	}
	return fileSHA256(path)
}
