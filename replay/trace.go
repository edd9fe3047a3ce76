package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"

	"github.com/tegrl/tegrl/datasets"
	"github.com/tegrl/tegrl/env"
)

// Trace is a recorded run (datasets.RecordRun, `tegrl dataset record`)
// opened for replay: its cluster and workload, read whole from
// machines.arrow and jobs.arrow, and its configuration, from the
// transitions file's schema metadata. The decisions stay in
// transitions.arrow and are streamed (Decisions), one record batch at a
// time.
type Trace struct {
	// Dir is the folder of the recording; Path its transitions file.
	Dir, Path string
	// Config is the run configuration stored under datasets.MetaRun.
	Config   datasets.RunConfig
	Cluster  *env.Cluster
	Workload *env.Workload
	// Rows is the number of decisions of the run, from run.json (-1
	// without one). A verified replay checks it against the transitions
	// file as it streams it.
	Rows int64
	// RecordedMetrics is the run's final env.Metrics as compact JSON,
	// from run.json; nil when the recording has no run.json (an
	// interrupted run), in which case only the decisions can be checked.
	RecordedMetrics []byte
}

// Open opens a recorded run: path is its transitions.arrow or the folder
// that holds it with jobs.arrow, machines.arrow and run.json. The files'
// checks (checksums, schemas, values) run here, and for the transitions'
// rows as a verified replay streams them (a replay that does not verify
// never reads them); a file that fails them, a recording made without a
// run configuration (before replay existed) and files that do not belong
// together are refused with an error that names the file.
func Open(path string) (*Trace, error) {
	t := &Trace{Dir: path, Path: filepath.Join(path, datasets.TransitionsFile)}
	if st, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	} else if !st.IsDir() {
		t.Dir, t.Path = filepath.Dir(path), path
	}
	r, err := datasets.OpenTransitions(t.Path, datasets.ReaderOptions{})
	if err != nil {
		return nil, fmt.Errorf("open trace %s: %w", t.Dir, err)
	}
	meta := r.Metadata()
	r.Close()
	raw, ok := meta[datasets.MetaRun]
	if !ok {
		return nil, fmt.Errorf("open trace %s: %s has no %s metadata: it was not recorded by datasets.RecordRun of a build with replay (record it again)",
			t.Dir, filepath.Base(t.Path), datasets.MetaRun)
	}
	if t.Config, err = ParseRunConfig([]byte(raw)); err != nil {
		return nil, fmt.Errorf("open trace %s: %s metadata %s: %w", t.Dir, filepath.Base(t.Path), datasets.MetaRun, err)
	}
	if t.Cluster, err = datasets.ReadCluster(filepath.Join(t.Dir, datasets.MachinesFile), datasets.ReaderOptions{}); err != nil {
		return nil, fmt.Errorf("open trace %s: %w", t.Dir, err)
	}
	if t.Workload, err = datasets.ReadWorkload(filepath.Join(t.Dir, datasets.JobsFile), datasets.ReaderOptions{}); err != nil {
		return nil, fmt.Errorf("open trace %s: %w", t.Dir, err)
	}
	c := &t.Config
	switch {
	case len(t.Cluster.Machines) != c.Machines:
		return nil, fmt.Errorf("open trace %s: %s has %d machines, the run had %d: the files do not belong together",
			t.Dir, datasets.MachinesFile, len(t.Cluster.Machines), c.Machines)
	case len(t.Workload.Jobs) != c.Jobs || t.Workload.Name != c.Workload:
		return nil, fmt.Errorf("open trace %s: %s holds %d jobs of workload %q, the run had %d of %q: the files do not belong together",
			t.Dir, datasets.JobsFile, len(t.Workload.Jobs), t.Workload.Name, c.Jobs, c.Workload)
	}
	t.Rows = -1
	sum, err := os.ReadFile(filepath.Join(t.Dir, datasets.RunFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return t, nil
	case err != nil:
		return nil, fmt.Errorf("open trace %s: %w", t.Dir, err)
	}
	s, err := ParseRunSummary(sum)
	if err != nil {
		return nil, fmt.Errorf("open trace %s: %s: %w", t.Dir, datasets.RunFile, err)
	}
	switch {
	case !bytes.Equal(s.Run, []byte(raw)):
		return nil, fmt.Errorf("open trace %s: %s describes another run than %s's metadata: the files do not belong together",
			t.Dir, datasets.RunFile, filepath.Base(t.Path))
	}
	t.Rows, t.RecordedMetrics = s.Transitions, s.Metrics
	return t, nil
}

// ParseRunConfig decodes and checks a run configuration (the value of
// datasets.MetaRun): known version and fields only, and values a
// simulation accepts. It is the decoder of outside input that
// FuzzParseRunConfig exercises.
func ParseRunConfig(b []byte) (datasets.RunConfig, error) {
	var c datasets.RunConfig
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("run configuration: %w", err)
	}
	if dec.More() {
		return c, errors.New("run configuration: data after the JSON object")
	}
	if c.Version != datasets.RunConfigVersion {
		return c, fmt.Errorf("run configuration version %d, this build replays version %d", c.Version, datasets.RunConfigVersion)
	}
	bad := func(what string, v any) error { return fmt.Errorf("run configuration: %s %v out of range", what, v) }
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case c.Scheduler == "":
		return c, errors.New("run configuration: no scheduler")
	case !(c.TickS > 0) || !finite(c.TickS):
		return c, bad("tick_s", c.TickS)
	case !(c.DurationS >= 0) || !finite(c.DurationS):
		return c, bad("duration_s", c.DurationS)
	case c.MaxTicks <= 0:
		return c, bad("max_ticks", c.MaxTicks)
	case c.MTBFS == 0 || !finite(c.MTBFS) || (c.MTBFS > 0 && !(c.MTTRS > 0 && finite(c.MTTRS))):
		return c, fmt.Errorf("run configuration: mtbf_s %v / mttr_s %v invalid", c.MTBFS, c.MTTRS)
	case c.ScanLimit <= 0 || c.MaxRestarts <= 0 || c.FragEvery <= 0:
		return c, fmt.Errorf("run configuration: scan_limit %d, max_restarts %d, frag_every %d must be positive (defaults are resolved when recording)",
			c.ScanLimit, c.MaxRestarts, c.FragEvery)
	case !(c.StarveAfterS > 0) || !finite(c.StarveAfterS):
		return c, bad("starve_after_s", c.StarveAfterS)
	case c.Machines <= 0 || c.Jobs < 0:
		return c, fmt.Errorf("run configuration: %d machines, %d jobs", c.Machines, c.Jobs)
	}
	return c, nil
}

// RunSummary is run.json as a replay reads it: the configuration and the
// metrics kept as the (compacted) bytes that were written, so that a
// replay's metrics can be compared with them byte for byte.
type RunSummary struct {
	Run         []byte
	Transitions int64
	Metrics     []byte
}

// ParseRunSummary decodes run.json (datasets.RunSummary). The run and
// metrics objects are returned compacted; the metrics must decode into
// env.Metrics.
func ParseRunSummary(b []byte) (RunSummary, error) {
	var raw struct {
		Run         json.RawMessage `json:"run"`
		Transitions *int64          `json:"transitions"`
		Metrics     json.RawMessage `json:"metrics"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return RunSummary{}, fmt.Errorf("not a run summary: %w", err)
	}
	if dec.More() {
		return RunSummary{}, errors.New("data after the JSON object")
	}
	if raw.Run == nil || raw.Transitions == nil || raw.Metrics == nil {
		return RunSummary{}, errors.New("run, transitions and metrics are required")
	}
	if *raw.Transitions < 0 {
		return RunSummary{}, fmt.Errorf("transitions %d is negative", *raw.Transitions)
	}
	var m env.Metrics
	if err := json.Unmarshal(raw.Metrics, &m); err != nil {
		return RunSummary{}, fmt.Errorf("metrics: %w", err)
	}
	s := RunSummary{Transitions: *raw.Transitions}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw.Run); err != nil {
		return RunSummary{}, fmt.Errorf("run: %w", err)
	}
	s.Run = bytes.Clone(buf.Bytes())
	buf.Reset()
	if err := json.Compact(&buf, raw.Metrics); err != nil {
		return RunSummary{}, fmt.Errorf("metrics: %w", err)
	}
	s.Metrics = bytes.Clone(buf.Bytes())
	return s, nil
}

// GovernorMode says which TEG configuration a replayed scheduler runs
// under.
type GovernorMode int8

const (
	// GovernorOwn (the default) runs a scheduler under its own governor
	// (env.GovernorFor), as tegrl simulate would, with the recording's
	// overrides of the recorded scheduler's governor (the fields where
	// Config.TEG differs from Config.Governor) applied to it. The
	// recorded scheduler thus gets exactly the recorded configuration.
	GovernorOwn GovernorMode = iota
	// GovernorRecorded runs every scheduler under the recorded TEG
	// configuration: the same world, only the placements change.
	GovernorRecorded
)

func (g GovernorMode) String() string {
	if g == GovernorRecorded {
		return "recorded"
	}
	return "own"
}

// ParseGovernorMode reads "own" or "recorded".
func ParseGovernorMode(s string) (GovernorMode, error) {
	switch s {
	case "own", "":
		return GovernorOwn, nil
	case "recorded":
		return GovernorRecorded, nil
	}
	return 0, fmt.Errorf("governor %q: want own or recorded", s)
}

// TEGFor is the TEG configuration scheduler s replays under.
func (t *Trace) TEGFor(s env.Scheduler, mode GovernorMode) env.TEGConfig {
	if mode == GovernorRecorded {
		return t.Config.TEG
	}
	out := env.GovernorFor(s)
	applyOverrides(reflect.ValueOf(&out).Elem(), reflect.ValueOf(t.Config.TEG), reflect.ValueOf(t.Config.Governor))
	return out
}

// applyOverrides sets each leaf field of dst where used differs from gov
// to used's value (floats compared bit for bit).
func applyOverrides(dst, used, gov reflect.Value) {
	for i := range used.NumField() {
		u, g := used.Field(i), gov.Field(i)
		if !dst.Field(i).CanSet() {
			continue
		}
		if u.Kind() == reflect.Struct {
			applyOverrides(dst.Field(i), u, g)
			continue
		}
		var same bool
		switch u.Kind() {
		case reflect.Float32, reflect.Float64:
			same = math.Float64bits(u.Float()) == math.Float64bits(g.Float())
		default:
			same = reflect.DeepEqual(u.Interface(), g.Interface())
		}
		if !same {
			dst.Field(i).Set(u)
		}
	}
}

// SimConfig is the simulator configuration of scheduler s's replay.
func (t *Trace) SimConfig(s env.Scheduler, mode GovernorMode) env.SimConfig {
	cfg := t.Config.Sim()
	teg := t.TEGFor(s, mode)
	cfg.TEG = &teg
	return cfg
}

// Decision is one scheduling decision: the Step-th call of the
// scheduler's Decide in a run, at simulated time TimeS, for job JobID (-1:
// none), and the action it returned.
type Decision struct {
	Step   int64
	TimeS  float64
	JobID  int32
	Action env.Action
}

// decisionJSON is Decision's JSON form; a NaN damping (the controller's)
// is null.
type decisionJSON struct {
	Step         int64    `json:"step"`
	TimeS        float64  `json:"time_s"`
	JobID        int32    `json:"job_id"`
	Node         int      `json:"node"`
	GPU          int      `json:"gpu"`
	ReplicaDelta int      `json:"replica_delta"`
	Affinity     float32  `json:"affinity"`
	Damping      *float32 `json:"damping"`
}

// MarshalJSON writes the decision with snake_case keys; damping is null
// when NaN (the controller's value).
func (d Decision) MarshalJSON() ([]byte, error) {
	j := decisionJSON{Step: d.Step, TimeS: d.TimeS, JobID: d.JobID, Node: d.Action.Node, GPU: d.Action.GPU,
		ReplicaDelta: d.Action.ReplicaDelta, Affinity: d.Action.Affinity}
	if !math.IsNaN(float64(d.Action.Damping)) {
		j.Damping = &d.Action.Damping
	}
	return json.Marshal(j)
}

// Same reports whether d and e are the same decision: step, time, job and
// every action field, floats bit for bit.
func (d *Decision) Same(e *Decision) bool {
	return d.Step == e.Step && math.Float64bits(d.TimeS) == math.Float64bits(e.TimeS) && d.JobID == e.JobID && sameAction(&d.Action, &e.Action)
}

func sameAction(a, b *env.Action) bool {
	return a.Node == b.Node && a.GPU == b.GPU && a.ReplicaDelta == b.ReplicaDelta &&
		math.Float32bits(a.Affinity) == math.Float32bits(b.Affinity) && math.Float32bits(a.Damping) == math.Float32bits(b.Damping)
}

// actionString describes the action for people: "node 3 gpu 1", "wait", plus
// the fields that are not a plain placement's.
func (d *Decision) actionString() string {
	a := &d.Action
	s := "wait"
	if a.Node >= 0 {
		s = "node " + strconv.Itoa(a.Node)
		if a.GPU >= 0 {
			s += " gpu " + strconv.Itoa(a.GPU)
		}
	}
	if a.ReplicaDelta != 0 {
		s += fmt.Sprintf(" replicas %+d", a.ReplicaDelta)
	}
	if a.Affinity != 0 {
		s += " affinity " + strconv.FormatFloat(float64(a.Affinity), 'g', -1, 32)
	}
	if !math.IsNaN(float64(a.Damping)) {
		s += " damping " + strconv.FormatFloat(float64(a.Damping), 'g', -1, 32)
	}
	return s
}

// Recorded streams a trace's recorded decisions, one record batch of the
// transitions file in memory at a time.
type Recorded struct {
	r     *datasets.TransitionsReader
	batch []datasets.Transition
	i     int
	err   error
}

// Decisions opens the stream of the recorded decisions, in order.
func (t *Trace) Decisions() (*Recorded, error) {
	r, err := datasets.OpenTransitions(t.Path, datasets.ReaderOptions{})
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", t.Dir, err)
	}
	return &Recorded{r: r}, nil
}

// Next returns the next recorded decision; false at the end or on an
// error (Err).
func (d *Recorded) Next() (Decision, bool) {
	for d.i >= len(d.batch) {
		if d.err != nil || !d.r.Next() {
			if d.err == nil {
				d.err = d.r.Err()
			}
			d.batch = nil
			return Decision{}, false
		}
		d.batch, d.i = d.r.Batch(), 0
	}
	tr := &d.batch[d.i]
	d.i++
	return Decision{Step: tr.Step, TimeS: tr.Time, JobID: tr.JobID, Action: tr.Action}, true
}

// Err returns the error that stopped Next (a corrupt batch), if any.
func (d *Recorded) Err() error { return d.err }

// Close releases the file.
func (d *Recorded) Close() error { return d.r.Close() }
