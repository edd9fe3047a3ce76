package datasets

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/tegrl/tegrl/env"
)

// capture is a scheduler that keeps a deep copy of every transition it
// sees, to compare with what a file gives back.
type capture struct {
	inner env.Scheduler
	t     env.Tensors
	out   []Transition
}

func (c *capture) Name() string { return c.inner.Name() }

func (c *capture) Decide(obs *env.Observation, rng *rand.Rand) env.Action {
	obs.FillTensors(&c.t)
	a := c.inner.Decide(obs, rng)
	tr := Transition{RunID: "cap", Step: int64(len(c.out)), Time: obs.Time, JobID: int32(obs.Job.ID), Action: a}
	CopyTensors(&tr.Obs, &c.t)
	c.out = append(c.out, tr)
	return a
}

// captured runs a short simulation and returns its decisions as
// transitions, with made-up learner fields so that every column varies.
func captured(t testing.TB, machines int, horizon float64, limit int) []Transition {
	t.Helper()
	c := testCluster(t, machines, 11)
	w := testWorkload(t, c, horizon, 11)
	inner, _ := env.NewScheduler("fgd")
	cp := &capture{inner: inner}
	sim, err := env.NewSim(c, w, cp, env.SimConfig{Seed: 11, Duration: horizon})
	if err != nil {
		t.Fatal(err)
	}
	for !sim.Done() && len(cp.out) < limit {
		sim.Step()
	}
	if len(cp.out) == 0 {
		t.Fatal("no decisions")
	}
	for i := range cp.out {
		tr := &cp.out[i]
		tr.Episode = int32(i % 3)
		tr.Reward = env.RewardTerms{Total: float64(i) * 0.25, Success: 1, Energy: 0.5, Latency: -0.125}
		tr.BehaviourLogp = -float32(i) / 7
		tr.Value = float32(i) / 3
		tr.PolicyVersion = uint64(i) * 1000
		tr.Action.ReplicaDelta = i%11 - 5
		tr.Action.Affinity = float32(i%5) / 4
		if i%2 == 0 {
			tr.Action.Damping = float32(i) / 10
		}
	}
	cp.out[len(cp.out)-1].Done = true
	return cp.out
}

func writeTransitions(t testing.TB, trs []Transition, opt WriterOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewTransitionsWriter(&buf, opt)
	if err != nil {
		t.Fatal(err)
	}
	for i := range trs {
		if err := w.Append(&trs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readTransitions(t testing.TB, data []byte, opt ReaderOptions) ([]Transition, error) {
	t.Helper()
	r, err := NewTransitionsReader("transitions.arrow", bytes.NewReader(data), opt)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []Transition
	for r.Next() {
		for i := range r.Batch() {
			out = append(out, r.Batch()[i].Clone())
		}
	}
	return out, r.Err()
}

func TestTransitionsRoundTrip(t *testing.T) {
	in := captured(t, 60, 1800, 50)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	data := writeTransitions(t, in, WriterOptions{BatchRows: 7, Allocator: mem})
	mem.AssertSize(t, 0)
	got, err := readTransitions(t, data, ReaderOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
	if len(got) != len(in) {
		t.Fatalf("%d transitions, want %d", len(got), len(in))
	}
	for i := range in {
		if !got[i].Equal(&in[i]) {
			t.Fatalf("transition %d differs after the round trip", i)
		}
	}
	// NaN damping (the controller's) survived as NaN.
	if !math.IsNaN(float64(got[1].Action.Damping)) {
		t.Fatalf("damping %v, want NaN", got[1].Action.Damping)
	}
	// A transition never equals a changed copy (Equal is not vacuous).
	c := in[3].Clone()
	c.Obs.History[len(c.Obs.History)-1] += 1
	if c.Equal(&in[3]) {
		t.Fatal("Equal missed a history change")
	}
}

// TestTransitionsBatchBytes: the byte bound splits batches before the row
// bound when rows are large.
func TestTransitionsBatchBytes(t *testing.T) {
	in := captured(t, 60, 1800, 12)
	data := writeTransitions(t, in, WriterOptions{BatchRows: 1000, BatchBytes: 1})
	r, err := NewTransitionsReader("t", bytes.NewReader(data), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.NumBatches() != len(in) {
		t.Fatalf("%d batches, want one per row (%d)", r.NumBatches(), len(in))
	}
}

func TestTransitionsWriterRefuses(t *testing.T) {
	in := captured(t, 40, 1800, 1)
	cases := []struct {
		col    string
		mutate func(tr *Transition)
	}{
		{"obs_machine", func(tr *Transition) { tr.Obs.Machine = tr.Obs.Machine[1:] }},
		{"obs_history", func(tr *Transition) { tr.Obs.History[5] = float32(math.NaN()) }},
		{"obs_mask", func(tr *Transition) { tr.Obs.Mask = append(tr.Obs.Mask, true) }},
		{"obs_edge_network_dst", func(tr *Transition) { tr.Obs.Edges[env.RelNetwork].Dst[0] = int32(tr.Obs.Machines) }},
		{"obs_edge_nvlink_feat", func(tr *Transition) { tr.Obs.Edges[env.RelNVLink].Feat = nil }},
		{"action_node", func(tr *Transition) { tr.Action.Node = tr.Obs.Machines }},
		{"action_damping", func(tr *Transition) { tr.Action.Damping = float32(math.Inf(1)) }},
		{"reward_energy", func(tr *Transition) { tr.Reward.Energy = math.NaN() }},
		{"behaviour_logp", func(tr *Transition) { tr.BehaviourLogp = float32(math.Inf(-1)) }},
		{"job_id", func(tr *Transition) { tr.JobID++ }},
	}
	for _, tc := range cases {
		tr := in[0].Clone()
		tc.mutate(&tr)
		w, err := NewTransitionsWriter(new(bytes.Buffer), WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		err = w.Append(&tr)
		if err == nil || !strings.Contains(err.Error(), "column "+tc.col+":") {
			t.Errorf("%s: got %v, want an error naming the column", tc.col, err)
		}
		w.Close()
	}
}

// TestTransitionsHashMismatch: a reader expecting another observation
// layout refuses the file and names both hashes and the file.
func TestTransitionsHashMismatch(t *testing.T) {
	data := writeTransitions(t, captured(t, 40, 1800, 2), WriterOptions{})
	other := strings.Repeat("ab", 32)
	_, err := readTransitions(t, data, ReaderOptions{SchemaHash: other})
	if !errors.Is(err, ErrSchemaHash) {
		t.Fatalf("got %v, want ErrSchemaHash", err)
	}
	for _, s := range []string{"transitions.arrow", other, env.ObservationSchemaHash()} {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error %q does not name %s", err, s)
		}
	}
	// Jobs files carry the hash too, checked when asked for.
	var buf bytes.Buffer
	if err := WriteWorkloadTo(&buf, &env.Workload{Name: "empty"}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadWorkloadFrom("jobs.arrow", bytes.NewReader(buf.Bytes()), ReaderOptions{SchemaHash: other}); !errors.Is(err, ErrSchemaHash) {
		t.Fatalf("jobs: got %v, want ErrSchemaHash", err)
	}
	if _, err := ReadWorkloadFrom("jobs.arrow", bytes.NewReader(buf.Bytes()), ReaderOptions{SchemaHash: env.ObservationSchemaHash()}); err != nil {
		t.Fatal(err)
	}
}

// TestKindMismatch: each reader refuses another kind's file.
func TestKindMismatch(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteWorkloadTo(&buf, &env.Workload{Name: "w"}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := ReadClusterFrom("jobs.arrow", bytes.NewReader(buf.Bytes()), ReaderOptions{})
	if err == nil || !strings.Contains(err.Error(), `holds "jobs", want "machines"`) {
		t.Fatalf("got %v", err)
	}
	if _, err := NewTransitionsReader("jobs.arrow", bytes.NewReader(buf.Bytes()), ReaderOptions{}); err == nil {
		t.Fatal("transitions reader accepted a jobs file")
	}
}

// TestRecordRun records a short simulation and checks the file: one row
// per decision, steps in order, done only on the last, rewards that sum
// to the run's accrued reward after the first decision, and a run that
// recording does not change.
func TestRecordRun(t *testing.T) {
	c := testCluster(t, 50, 21)
	w := testWorkload(t, c, 1200, 21)
	cfg := env.SimConfig{Seed: 21, Duration: 1200}
	sched, _ := env.NewScheduler("bestfit")
	dir := t.TempDir()
	res, err := RecordRun(context.Background(), dir, c, w, sched, RecordConfig{RunID: "r1", Sim: cfg, Writer: WriterOptions{BatchRows: 64}})
	if err != nil {
		t.Fatal(err)
	}
	// The same run without the recorder: same metrics. It also notes the
	// reward accrued before the step of the first decision, which no
	// transition gets.
	plain, _ := env.NewScheduler("bestfit")
	fd := &firstDecision{inner: plain}
	sim, err := env.NewSim(c, w, fd, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var before env.Accrual
	for !sim.Done() {
		if !fd.seen {
			before = sim.Accrued()
		}
		sim.Step()
	}
	if m := sim.Metrics(); !reflect.DeepEqual(m, res.Metrics) {
		t.Fatalf("recording changed the run:\n got %+v\nwant %+v", res.Metrics, m)
	}
	wantSum := sim.Accrued().Total - before.Total
	r, err := OpenTransitions(filepath.Join(dir, TransitionsFile), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var n int64
	var sum float64
	var last Transition
	for r.Next() {
		for i := range r.Batch() {
			tr := &r.Batch()[i]
			if tr.Step != n || tr.RunID != "r1" || tr.Episode != 0 {
				t.Fatalf("row %d: step %d run %q episode %d", n, tr.Step, tr.RunID, tr.Episode)
			}
			if tr.Done != (n == res.Transitions-1) {
				t.Fatalf("row %d of %d: done %v", n, res.Transitions, tr.Done)
			}
			if tr.BehaviourLogp != 0 || tr.Value != 0 || tr.PolicyVersion != 0 {
				t.Fatalf("row %d: learner fields set for a non-learned scheduler", n)
			}
			if tr.Obs.PendingRow != 0 || tr.Obs.JobID[0] != tr.JobID || tr.Obs.Machines != len(c.Machines) {
				t.Fatalf("row %d: pending row %d, job %d", n, tr.Obs.PendingRow, tr.JobID)
			}
			sum += tr.Reward.Total
			n++
			last = tr.Clone()
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if n != res.Transitions || n < 20 {
		t.Fatalf("%d rows, the recorder counted %d (want a run with decisions)", n, res.Transitions)
	}
	if !last.Done {
		t.Fatal("last transition not done")
	}
	if math.Abs(sum-wantSum) > 1e-9*max(1, wantSum) {
		t.Fatalf("rewards sum to %.12f, the run accrued %.12f after its first decision", sum, wantSum)
	}
	gotC, err := ReadCluster(filepath.Join(dir, MachinesFile), ReaderOptions{})
	if err != nil || !reflect.DeepEqual(gotC, c) {
		t.Fatalf("machines.arrow: %v", err)
	}
	gotW, err := ReadWorkload(filepath.Join(dir, JobsFile), ReaderOptions{})
	if err != nil || !reflect.DeepEqual(gotW, w) {
		t.Fatalf("jobs.arrow: %v", err)
	}
}

// TestDeterminism: the same seed gives byte-identical files.
func TestDeterminism(t *testing.T) {
	run := func() map[string][]byte {
		dir := t.TempDir()
		c := testCluster(t, 40, 9)
		w := testWorkload(t, c, 900, 9)
		sched, _ := env.NewScheduler("p2c")
		if _, err := RecordRun(context.Background(), dir, c, w, sched, RecordConfig{RunID: "d", Sim: env.SimConfig{Seed: 9, Duration: 900}}); err != nil {
			t.Fatal(err)
		}
		gen := filepath.Join(dir, "gen")
		if _, err := Generate(gen, GenConfig{Machines: 30, Seed: 9, Workload: env.WorkloadConfig{Horizon: 600}}); err != nil {
			t.Fatal(err)
		}
		out := map[string][]byte{}
		for _, p := range []string{TransitionsFile, JobsFile, MachinesFile, "gen/" + JobsFile, "gen/" + MachinesFile} {
			b, err := os.ReadFile(filepath.Join(dir, p))
			if err != nil {
				t.Fatal(err)
			}
			out[p] = b
		}
		return out
	}
	a, b := run(), run()
	for p := range a {
		if !bytes.Equal(a[p], b[p]) {
			t.Fatalf("%s differs between two runs with the same seed", p)
		}
	}
}

// firstDecision notes whether its scheduler has decided yet.
type firstDecision struct {
	inner env.Scheduler
	seen  bool
}

func (f *firstDecision) Name() string { return f.inner.Name() }

func (f *firstDecision) Decide(obs *env.Observation, rng *rand.Rand) env.Action {
	f.seen = true
	return f.inner.Decide(obs, rng)
}

// governed is a scheduler with its own governor configuration.
type governed struct{ env.Scheduler }

func (governed) Governor() env.TEGConfig {
	c := env.GovernorTEG("bestfit")
	c.Moves, c.Controller = true, true
	return c
}

// TestRecorderGovernor: the recorder hands the simulator the wrapped
// scheduler's governor configuration, its own or by name.
func TestRecorderGovernor(t *testing.T) {
	inner, _ := env.NewScheduler("bestfit")
	for _, s := range []env.Scheduler{inner, governed{inner}} {
		rec := NewRecorder(s, nil, "r", 0)
		if got, want := env.GovernorFor(rec), env.GovernorFor(s); !reflect.DeepEqual(got, want) {
			t.Fatalf("%T: recorder governor %+v, want %+v", s, got, want)
		}
	}
	if env.GovernorFor(NewRecorder(governed{inner}, nil, "r", 0)).Moves != true {
		t.Fatal("a Governed scheduler's own configuration was lost")
	}
}

// behaving reports a made-up behaviour for each decision.
type behaving struct {
	env.Scheduler
	n int
}

func (b *behaving) Decide(obs *env.Observation, rng *rand.Rand) env.Action {
	b.n++
	return b.Scheduler.Decide(obs, rng)
}

func (b *behaving) LastBehaviour() (float32, float32, uint64) {
	return -float32(b.n), float32(b.n) / 2, 7
}

// TestRecorderBehaviour: a scheduler implementing Behaviour has its
// log-prob, value and policy version recorded with each decision.
func TestRecorderBehaviour(t *testing.T) {
	c := testCluster(t, 30, 5)
	w := testWorkload(t, c, 900, 5)
	inner, _ := env.NewScheduler("dotprod")
	var buf bytes.Buffer
	tw, err := NewTransitionsWriter(&buf, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n, _, err := Record(context.Background(), c, w, &behaving{Scheduler: inner}, RecordConfig{Sim: env.SimConfig{Seed: 5, Duration: 900}}, tw)
	if err != nil || n == 0 {
		t.Fatalf("%d transitions, %v", n, err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := readTransitions(t, buf.Bytes(), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, tr := range got {
		k := float32(i + 1)
		if tr.BehaviourLogp != -k || tr.Value != k/2 || tr.PolicyVersion != 7 {
			t.Fatalf("row %d: logp %v value %v version %d", i, tr.BehaviourLogp, tr.Value, tr.PolicyVersion)
		}
	}
}
