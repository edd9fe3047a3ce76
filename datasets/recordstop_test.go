package datasets

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/tegrl/tegrl/env"
)

// cancelAfter cancels its context at its n-th decision, as a signal
// arriving mid-run would.
type cancelAfter struct {
	env.Scheduler
	n, seen int
	cancel  context.CancelFunc
}

func (c *cancelAfter) Decide(o *env.Observation, rng *rand.Rand) env.Action {
	if c.seen++; c.seen == c.n {
		c.cancel()
	}
	return c.Scheduler.Decide(o, rng)
}

// readRows reads a transitions file whole and returns its rows' steps and
// whether the last is done.
func readRows(t *testing.T, path string) (steps []int64, lastDone bool) {
	t.Helper()
	r, err := OpenTransitions(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for r.Next() {
		for i := range r.Batch() {
			steps = append(steps, r.Batch()[i].Step)
			lastDone = r.Batch()[i].Done
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return steps, lastDone
}

// TestRecordRunCancelled: a context cancelled at the 7th decision stops
// the recording at the end of that decision's tick, and the transitions
// file is complete and valid with a row for each decision made until
// then, the last not done; no run.json.
func TestRecordRunCancelled(t *testing.T) {
	c := testCluster(t, 40, 21)
	w := testWorkload(t, c, 1200, 21)
	inner, _ := env.NewScheduler("bestfit")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sched := &cancelAfter{Scheduler: inner, n: 7, cancel: cancel}
	dir := t.TempDir()
	res, err := RecordRun(ctx, dir, c, w, sched, RecordConfig{RunID: "c", Sim: env.SimConfig{Seed: 21, Duration: 1200}, Writer: WriterOptions{BatchRows: 4}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if res.Transitions != int64(sched.seen) || sched.seen < 7 || sched.seen > 60 {
		t.Fatalf("result says %d transitions, the scheduler made %d decisions", res.Transitions, sched.seen)
	}
	steps, done := readRows(t, filepath.Join(dir, TransitionsFile))
	if len(steps) != sched.seen || steps[len(steps)-1] != int64(sched.seen-1) || done {
		t.Fatalf("file holds steps %v (last done %v), want 0..%d not done", steps, done, sched.seen-1)
	}
	if _, err := os.Stat(filepath.Join(dir, RunFile)); !os.IsNotExist(err) {
		t.Fatalf("run.json after a stopped run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, TransitionsFile+".partial")); !os.IsNotExist(err) {
		t.Fatalf("partial file left: %v", err)
	}
}

// TestRecordRunMaxBytes: a cap of five and a half rows stops the
// recording before the sixth with ErrMaxBytes; the file holds the five
// whole rows, is valid, and is not larger than the cap and the file's
// framing.
func TestRecordRunMaxBytes(t *testing.T) {
	c := testCluster(t, 40, 21)
	w := testWorkload(t, c, 1200, 21)
	cfg := env.SimConfig{Seed: 21, Duration: 1200}
	run := func(dir string, max int64) (RecordResult, error) {
		sched, _ := env.NewScheduler("bestfit")
		return RecordRun(context.Background(), dir, c, w, sched, RecordConfig{RunID: "m", Sim: cfg, Writer: WriterOptions{BatchRows: 2}, MaxBytes: max})
	}
	full := t.TempDir()
	all, err := run(full, 0)
	if err != nil {
		t.Fatal(err)
	}
	if all.Transitions < 20 {
		t.Fatalf("%d transitions: want a run with decisions", all.Transitions)
	}
	// The rows' sizes, from a writer fed the full file's first rows.
	r, err := OpenTransitions(filepath.Join(full, TransitionsFile), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tw, err := NewTransitionsWriter(discard{}, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int64
	for len(sizes) < 6 && r.Next() {
		for i := range r.Batch() {
			if err := tw.Append(&r.Batch()[i]); err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, tw.Bytes())
		}
	}
	r.Close()
	tw.Close()
	capB := sizes[4] + (sizes[5]-sizes[4])/2
	dir := t.TempDir()
	res, err := run(dir, capB)
	if !errors.Is(err, ErrMaxBytes) {
		t.Fatalf("err %v, want ErrMaxBytes", err)
	}
	steps, done := readRows(t, filepath.Join(dir, TransitionsFile))
	if len(steps) != 5 || res.Transitions != 5 || done {
		t.Fatalf("file holds steps %v (result %d, last done %v), want 0..4 not done", steps, res.Transitions, done)
	}
	st, err := os.Stat(filepath.Join(dir, TransitionsFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > capB+64<<10 {
		t.Fatalf("file of %d bytes for a cap of %d", st.Size(), capB)
	}
	if _, err := os.Stat(filepath.Join(dir, RunFile)); !os.IsNotExist(err) {
		t.Fatalf("run.json after a stopped run: %v", err)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestRecorderJobRowsBounded: on a cluster without GPUs under the
// synthetic workload (its GPU jobs never place, and the running jobs pile
// up), the live observation outgrows MaxJobRows; the recorded row keeps
// the first MaxJobRows job rows, their IDs, and exactly the runs-on edges
// of those rows, and passes the file's checks.
func TestRecorderJobRowsBounded(t *testing.T) {
	c := testCluster(t, 96, 5)
	if c.TotalGPUs() != 0 {
		t.Fatalf("cluster seed 5 has %d GPUs; the test wants none", c.TotalGPUs())
	}
	w := testWorkload(t, c, 6*3600, 5)
	tw, err := NewTransitionsWriter(discard{}, WriterOptions{BatchRows: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Close()
	sched, _ := env.NewScheduler("fgd")
	rec := NewRecorder(sched, tw, "b", 0)
	sim, err := env.NewSim(c, w, rec, env.SimConfig{Seed: 5, Duration: 6 * 3600})
	if err != nil {
		t.Fatal(err)
	}
	for !sim.Done() && !(rec.has && rec.t.Jobs > MaxJobRows) {
		sim.Step()
		if err := rec.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if !rec.has || rec.t.Jobs <= MaxJobRows {
		t.Fatalf("the observation never outgrew %d job rows (t=%.0f s)", MaxJobRows, sim.Now())
	}
	live, got := &rec.t, &rec.open.Obs
	if got.Jobs != MaxJobRows || len(got.Job) != MaxJobRows*env.JobFeatures || len(got.JobID) != MaxJobRows {
		t.Fatalf("recorded %d jobs (%d features, %d IDs), want %d", got.Jobs, len(got.Job), len(got.JobID), MaxJobRows)
	}
	for _, r := range []env.Relation{env.RelRunsOnMachine, env.RelRunsOnGPU} {
		want := 0
		for _, s := range live.Edges[r].Src {
			if s < MaxJobRows {
				want++
			}
		}
		if n := len(got.Edges[r].Src); n != want {
			t.Fatalf("%s: %d edges recorded, the kept rows have %d", r, n, want)
		}
	}
	if len(got.Edges[env.RelRunsOnMachine].Src) == len(live.Edges[env.RelRunsOnMachine].Src) {
		t.Fatal("no runs-on-machine edge left out")
	}
	if col, err := checkTransition(&rec.open); err != nil {
		t.Fatalf("column %s: %v", col, err)
	}
	t.Logf("t=%.0f s: %d live job rows, %d recorded", sim.Now(), live.Jobs, got.Jobs)
}
