package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/tegrl/tegrl/datasets"
	"github.com/tegrl/tegrl/env"
)

// testRun is the recorded run of the tests: 32 machines, 30 simulated
// minutes, and machines failing every 2 hours on average (10-minute
// repairs), so that failures and repairs are part of the trace.
var testRun = struct {
	machines int
	horizon  float64
	seed     uint64
	sim      env.SimConfig
}{32, 1800, 7, env.SimConfig{Seed: 7, Duration: 1800, MTBF: 7200, MTTR: 600}}

var (
	recordOnce sync.Map // scheduler name -> *recording
)

type recording struct {
	once sync.Once
	dir  string
	res  datasets.RecordResult
	err  error
}

// record records the test run under the named scheduler once per test
// binary, into a folder the tests must not change (copy it first).
func record(t testing.TB, name string) (string, datasets.RecordResult) {
	t.Helper()
	v, _ := recordOnce.LoadOrStore(name, &recording{})
	r := v.(*recording)
	r.once.Do(func() {
		r.dir, r.err = os.MkdirTemp("", "tegrl-replay-"+name+"-")
		if r.err != nil {
			return
		}
		c, err := env.NewSyntheticCluster(testRun.machines, testRun.seed)
		if err != nil {
			r.err = err
			return
		}
		wc := env.DefaultWorkload
		wc.Horizon = testRun.horizon
		w, err := env.NewSyntheticWorkload(c, wc, testRun.seed)
		if err != nil {
			r.err = err
			return
		}
		sched, err := env.NewScheduler(name)
		if err != nil {
			r.err = err
			return
		}
		r.res, r.err = datasets.RecordRun(context.Background(), r.dir, c, w, sched,
			datasets.RecordConfig{RunID: name, Sim: testRun.sim, Writer: datasets.WriterOptions{BatchRows: 64}})
	})
	if r.err != nil {
		t.Fatalf("record %s: %v", name, r.err)
	}
	return r.dir, r.res
}

// TestMain removes the recordings.
func TestMain(m *testing.M) {
	code := m.Run()
	recordOnce.Range(func(_, v any) bool {
		if r := v.(*recording); r.dir != "" {
			os.RemoveAll(r.dir)
		}
		return true
	})
	os.Exit(code)
}

// copyTrace copies a recording into a fresh folder.
func copyTrace(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	for _, f := range []string{datasets.TransitionsFile, datasets.JobsFile, datasets.MachinesFile, datasets.RunFile} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func newSched(t testing.TB, name string) env.Scheduler {
	t.Helper()
	s, err := env.NewScheduler(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func openTrace(t testing.TB, path string) *Trace {
	t.Helper()
	tr, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// recordedDecisions reads every recorded decision.
func recordedDecisions(t *testing.T, tr *Trace) []Decision {
	t.Helper()
	rec, err := tr.Decisions()
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	var out []Decision
	for {
		d, ok := rec.Next()
		if !ok {
			break
		}
		out = append(out, d)
	}
	if err := rec.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReplayReproduces: replaying a recording with its scheduler makes
// every recorded decision again, in order, and metrics whose JSON is the
// recorded one byte for byte; both the transitions file and its folder
// open the trace.
func TestReplayReproduces(t *testing.T) {
	for _, name := range []string{"langevin", "fgd"} {
		t.Run(name, func(t *testing.T) {
			dir, rec := record(t, name)
			if rec.Metrics.MachineFailures == 0 {
				t.Fatalf("the recorded run has no machine failures: the test needs them in the trace")
			}
			if rec.Transitions < 50 {
				t.Fatalf("%d decisions recorded: want a run with decisions", rec.Transitions)
			}
			tr := openTrace(t, filepath.Join(dir, datasets.TransitionsFile))
			if tr.Dir != dir || tr.Rows != rec.Transitions || tr.Config.Scheduler != name || tr.Config.Seed != testRun.seed {
				t.Fatalf("trace %+v", tr.Config)
			}
			res, err := Run(context.Background(), tr, newSched(t, name), Options{KeepDecisions: true})
			if err != nil {
				t.Fatal(err)
			}
			v := res.Verification
			if !v.Checked || !v.Reproduced || v.Divergence != nil || !v.MetricsRecorded || !v.MetricsIdentical {
				t.Fatalf("not reproduced: %+v (divergence %v)", v, v.Divergence)
			}
			if v.Identical != rec.Transitions || res.NumDecisions != rec.Transitions {
				t.Fatalf("%d identical, %d replayed, %d recorded", v.Identical, res.NumDecisions, rec.Transitions)
			}
			// The same checks without the library's own verification.
			want := recordedDecisions(t, tr)
			if len(want) != len(res.Decisions) {
				t.Fatalf("%d decisions, %d recorded", len(res.Decisions), len(want))
			}
			for i := range want {
				if !want[i].Same(&res.Decisions[i]) {
					t.Fatalf("decision %d: replayed %+v, recorded %+v", i, res.Decisions[i], want[i])
				}
			}
			b, _ := json.Marshal(rec.Metrics)
			if !bytes.Equal(res.MetricsJSON, b) || !bytes.Equal(tr.RecordedMetrics, b) {
				t.Fatalf("metrics JSON\nreplay   %s\nrecorded %s", res.MetricsJSON, b)
			}
			if !reflect.DeepEqual(res.TEG, tr.Config.TEG) {
				t.Fatalf("the recorded scheduler replays under %+v, recorded %+v", res.TEG, tr.Config.TEG)
			}
			// The folder opens the same trace; a second replay is the same.
			res2, err := Run(context.Background(), openTrace(t, dir), newSched(t, name), Options{})
			if err != nil || !res2.Verification.Reproduced || !bytes.Equal(res2.MetricsJSON, res.MetricsJSON) {
				t.Fatalf("second replay: %v %+v", err, res2.Verification)
			}
		})
	}
}

// TestReplayOtherScheduler: another scheduler is not verified by
// default; verified anyway, it diverges at a precisely described step.
func TestReplayOtherScheduler(t *testing.T) {
	dir, _ := record(t, "fgd")
	tr := openTrace(t, dir)
	res, err := Run(context.Background(), tr, newSched(t, "bestfit"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verification.Checked || res.Metrics.Scheduler != "bestfit" || res.NumDecisions == 0 {
		t.Fatalf("bestfit replay: %+v", res.Verification)
	}
	want := recordedDecisions(t, tr)
	res, err = Run(context.Background(), tr, newSched(t, "bestfit"), Options{Verify: VerifyAlways, KeepDecisions: true})
	if err != nil {
		t.Fatal(err)
	}
	v := res.Verification
	if !v.Checked || v.Reproduced || v.Divergence == nil || v.MetricsIdentical || len(v.MetricsDiffering) == 0 {
		t.Fatalf("bestfit verified against fgd: %+v", v)
	}
	d := v.Divergence
	k := v.Identical
	if d.Step != k || d.Recorded == nil || d.Replayed == nil || !want[k].Same(d.Recorded) || !res.Decisions[k].Same(d.Replayed) {
		t.Fatalf("divergence %+v at %d identical decisions", d, k)
	}
	for i := range k {
		if !want[i].Same(&res.Decisions[i]) {
			t.Fatalf("decision %d differs before the reported divergence", i)
		}
	}
	if s := d.String(); !strings.Contains(s, "step ") || !strings.Contains(s, "recorded") || !strings.Contains(s, "replayed") {
		t.Fatalf("divergence text %q", s)
	}
	if !slicesContains(v.MetricsDiffering, "scheduler") {
		t.Fatalf("differing metrics %v lack the scheduler's name", v.MetricsDiffering)
	}
	if err := NewReport(tr, res, nil).Failure(); err == nil || !strings.Contains(err.Error(), "replay under bestfit did not reproduce the recording: step ") {
		t.Fatalf("failure: %v", err)
	}
	// Never: the transitions file is not even read.
	res, err = Run(context.Background(), tr, newSched(t, "fgd"), Options{Verify: VerifyNever})
	if err != nil || res.Verification.Checked {
		t.Fatalf("VerifyNever: %v %+v", err, res.Verification)
	}
}

func slicesContains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// TestGovernorModes: own gives another scheduler its own governor
// (langevin's moves and controller) with the recording's overrides; the
// recorded mode gives every scheduler the recorded configuration.
func TestGovernorModes(t *testing.T) {
	dir, _ := record(t, "fgd")
	tr := openTrace(t, dir)
	lang := newSched(t, "langevin")
	own := tr.TEGFor(lang, GovernorOwn)
	if !reflect.DeepEqual(own, env.GovernorFor(lang)) {
		t.Fatalf("no overrides recorded, yet langevin's own governor changed: %+v", own)
	}
	if rec := tr.TEGFor(lang, GovernorRecorded); !reflect.DeepEqual(rec, tr.Config.TEG) || rec.Moves {
		t.Fatalf("recorded mode: %+v", rec)
	}
	// An override of the recorded scheduler's governor (--safety off,
	// --w-frag 3) carries over to another scheduler's.
	tr.Config.TEG.Safety = false
	tr.Config.TEG.Weights.Frag = 3
	own = tr.TEGFor(lang, GovernorOwn)
	want := env.GovernorFor(lang)
	want.Safety, want.Weights.Frag = false, 3
	if !reflect.DeepEqual(own, want) {
		t.Fatalf("overrides: got %+v\nwant %+v", own, want)
	}
	if m, err := ParseGovernorMode("recorded"); err != nil || m != GovernorRecorded || m.String() != "recorded" {
		t.Fatalf("ParseGovernorMode: %v %v", m, err)
	}
	if _, err := ParseGovernorMode("mine"); err == nil {
		t.Fatal("ParseGovernorMode accepted mine")
	}
}

// TestCorruptTrace: a truncated or corrupted file, a missing file, files
// of another run and a recording without run configuration are refused
// with errors that say what and where.
func TestCorruptTrace(t *testing.T) {
	src, _ := record(t, "fgd")
	cases := []struct {
		name   string
		change func(dir string)
		want   string // in the error of Open, or else of a verified Run
	}{
		{"truncated transitions", func(dir string) { truncate(t, filepath.Join(dir, datasets.TransitionsFile), 0.6) },
			"transitions.arrow: not a readable Arrow IPC file"},
		{"truncated jobs", func(dir string) { truncate(t, filepath.Join(dir, datasets.JobsFile), 0.5) }, "jobs.arrow"},
		{"corrupt transitions batch", func(dir string) { flip(t, filepath.Join(dir, datasets.TransitionsFile), 0.5) },
			"transitions.arrow: batch "},
		{"missing machines", func(dir string) { os.Remove(filepath.Join(dir, datasets.MachinesFile)) }, "machines.arrow"},
		{"run.json of another run", func(dir string) {
			edit(t, filepath.Join(dir, datasets.RunFile), `"seed":7`, `"seed":8`)
		}, "run.json describes another run"},
		{"run.json not JSON", func(dir string) { os.WriteFile(filepath.Join(dir, datasets.RunFile), []byte("{"), 0o644) },
			"run.json: not a run summary"},
		{"run.json count", func(dir string) { edit(t, filepath.Join(dir, datasets.RunFile), `"transitions":`, `"transitions":1`) },
			"run.json counts"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyTrace(t, src)
			c.change(dir)
			tr, err := Open(dir)
			if err == nil {
				_, err = Run(context.Background(), tr, newSched(t, "fgd"), Options{})
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	// A transitions file without the run configuration (recorded before
	// replay existed: Record with a writer of its own).
	dir := copyTrace(t, src)
	c, _ := datasets.ReadCluster(filepath.Join(dir, datasets.MachinesFile), datasets.ReaderOptions{})
	w, _ := datasets.ReadWorkload(filepath.Join(dir, datasets.JobsFile), datasets.ReaderOptions{})
	tw, err := datasets.CreateTransitions(filepath.Join(dir, datasets.TransitionsFile), datasets.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := datasets.Record(context.Background(), c, w, newSched(t, "fgd"), datasets.RecordConfig{Sim: env.SimConfig{Seed: 1, Duration: 60}}, tw); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "has no record.run metadata") {
		t.Fatalf("old recording: %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "nothing")); err == nil {
		t.Fatal("opened a missing trace")
	}
}

// TestNoRunSummary: without run.json (an interrupted recording's) the
// decisions are still verified; the metrics are not.
func TestNoRunSummary(t *testing.T) {
	src, _ := record(t, "fgd")
	dir := copyTrace(t, src)
	os.Remove(filepath.Join(dir, datasets.RunFile))
	tr := openTrace(t, dir)
	res, err := Run(context.Background(), tr, newSched(t, "fgd"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := res.Verification
	if !v.Checked || v.Divergence != nil || v.MetricsRecorded || v.Reproduced || v.Recorded != -1 || v.Identical == 0 {
		t.Fatalf("%+v", v)
	}
}

// TestDivergenceEnds: a replay that decides less or more often than the
// recording diverges at the first missing or extra step.
func TestDivergenceEnds(t *testing.T) {
	src, rec := record(t, "fgd")
	tr := openTrace(t, src)
	// A shorter replay: the recording has decisions after its end.
	short := *tr
	short.Config.DurationS = 600
	res, err := Run(context.Background(), &short, newSched(t, "fgd"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := res.Verification.Divergence
	if d == nil || d.Reason != DivergedMissed || d.Replayed != nil || d.Step != res.NumDecisions || res.NumDecisions >= rec.Transitions {
		t.Fatalf("short replay: %+v", d)
	}
	if !strings.Contains(d.String(), "did not make") {
		t.Fatalf("text %q", d.String())
	}
	// A longer one: the replay decides beyond the recording.
	long := *tr
	long.Config.DurationS = 2400
	res, err = Run(context.Background(), &long, newSched(t, "fgd"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	d = res.Verification.Divergence
	if d == nil || d.Reason != DivergedExtra || d.Recorded != nil || d.Step != rec.Transitions {
		t.Fatalf("long replay: %+v", d)
	}
}

// TestDecisionJSON: snake_case keys, a NaN damping as null.
func TestDecisionJSON(t *testing.T) {
	d := Decision{Step: 3, TimeS: 20, JobID: 9, Action: env.Place(4, 1)}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"step":3,"time_s":20,"job_id":9,"node":4,"gpu":1,"replica_delta":0,"affinity":0,"damping":null}`; string(b) != want {
		t.Fatalf("got %s\nwant %s", b, want)
	}
	d.Action.Damping = 0.5
	if b, _ = json.Marshal(d); !strings.Contains(string(b), `"damping":0.5`) {
		t.Fatalf("got %s", b)
	}
	if !math.IsNaN(float64(env.Wait.Damping)) {
		t.Fatal("env.Wait's damping is no longer NaN: update Decision's JSON")
	}
}

func truncate(t *testing.T, path string, frac float64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:int(float64(len(b))*frac)], 0o644); err != nil {
		t.Fatal(err)
	}
}

func flip(t *testing.T, path string, frac float64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[int(float64(len(b))*frac)] ^= 0x55
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func edit(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s lacks %q", path, old)
	}
	if err := os.WriteFile(path, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}
