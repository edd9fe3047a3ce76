package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// recordForReplay records a small fgd run with machine failures.
func recordForReplay(t *testing.T) string {
	t.Helper()
	out := t.TempDir()
	if _, stderr, err := run(t, "dataset", "record", "--scheduler", "fgd", "--machines", "24", "--duration", "15m", "--seed", "4",
		"--mtbf", "3600", "--out", out, "--log-level", "warn"); err != nil {
		t.Fatalf("record: %v\n%s", err, stderr)
	}
	return out
}

func TestReplayCommand(t *testing.T) {
	dir := recordForReplay(t)

	// The recorded scheduler by default: reproduced, with the metrics.
	stdout, stderr, err := run(t, "replay", "--trace", dir, "--log-level", "warn")
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr)
	}
	if !regexp.MustCompile(`reproduced  yes: (\d+) of (\d+) decisions identical, metrics JSON byte-identical`).MatchString(stdout) ||
		!strings.Contains(stdout, "replay      fgd under its own governor") || !strings.Contains(stdout, "mean_jct_s") {
		t.Fatalf("replay output:\n%s", stdout)
	}
	if stderr != "" {
		t.Errorf("stderr at --log-level warn: %q", stderr)
	}

	// JSON: one object; the recorded metrics, byte for byte.
	stdout, _, err = run(t, "replay", "--trace", filepath.Join(dir, "transitions.arrow"), "--scheduler", "fgd", "--json", "--log-level", "warn")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Trace struct {
			Scheduler string `json:"scheduler"`
			Decisions int64  `json:"decisions"`
		} `json:"trace"`
		Replay struct {
			Scheduler    string          `json:"scheduler"`
			Decisions    int64           `json:"decisions"`
			Metrics      json.RawMessage `json:"metrics"`
			Verification struct {
				Checked    bool  `json:"checked"`
				Reproduced bool  `json:"reproduced"`
				Identical  int64 `json:"decisions_identical"`
			} `json:"verification"`
		} `json:"replay"`
	}
	if strings.Count(stdout, "\n") != 1 {
		t.Fatalf("want one line of JSON:\n%s", stdout)
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	v := rep.Replay.Verification
	if rep.Trace.Scheduler != "fgd" || rep.Trace.Decisions == 0 || !v.Checked || !v.Reproduced || v.Identical != rep.Trace.Decisions ||
		rep.Replay.Decisions != rep.Trace.Decisions {
		t.Fatalf("JSON report %+v", rep)
	}
	var sum struct {
		Metrics json.RawMessage `json:"metrics"`
	}
	runJSON, _ := os.ReadFile(filepath.Join(dir, "run.json"))
	if err := json.Unmarshal(runJSON, &sum); err != nil || !bytes.Equal(sum.Metrics, rep.Replay.Metrics) {
		t.Fatalf("metrics\nreplay   %s\nrecorded %s (%v)", rep.Replay.Metrics, sum.Metrics, err)
	}

	// Another scheduler: not checked, no failure.
	stdout, _, err = run(t, "replay", "--trace", dir, "--scheduler", "bestfit", "--log-level", "warn")
	if err != nil || !strings.Contains(stdout, "reproduced  not checked (the recording is fgd's)") {
		t.Fatalf("bestfit: %v\n%s", err, stdout)
	}
}

func TestReplayDiffCommand(t *testing.T) {
	dir := recordForReplay(t)
	stdout, stderr, err := run(t, "replay", "--trace", dir, "--diff", "langevin", "--limit", "3", "--log-level", "warn")
	if err != nil {
		t.Fatalf("diff: %v\n%s", err, stderr)
	}
	for _, want := range []string{"other       langevin under its own governor", "aligned by job and occurrence",
		"time_s  job  occ  fgd", "(first 3 of ", "metric              better   fgd (A)", "mean_jct_s", "reward_mean"} {
		if !strings.Contains(stdout, want) {
			t.Fatalf("diff output lacks %q:\n%s", want, stdout)
		}
	}
	stdout, _, err = run(t, "replay", "--trace", dir, "--diff", "langevin", "--limit", "0", "--json", "--log-level", "warn")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Replay struct{ Scheduler string } `json:"replay"`
		Other  struct{ Scheduler string } `json:"other"`
		Diff   struct {
			Differing   int64 `json:"differing"`
			OnlyA       int64 `json:"only_a"`
			OnlyB       int64 `json:"only_b"`
			Differences []struct {
				JobID int32           `json:"job_id"`
				A     json.RawMessage `json:"a"`
				B     json.RawMessage `json:"b"`
			} `json:"differences"`
			Metrics []struct {
				Name  string  `json:"name"`
				A     float64 `json:"a"`
				B     float64 `json:"b"`
				Delta float64 `json:"b_minus_a"`
			} `json:"metrics"`
		} `json:"diff"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	d := rep.Diff
	if rep.Replay.Scheduler != "fgd" || rep.Other.Scheduler != "langevin" || d.Differing == 0 ||
		int64(len(d.Differences)) != d.Differing+d.OnlyA+d.OnlyB || len(d.Metrics) < 40 {
		t.Fatalf("diff JSON: %d differing, %d listed, %d metrics", d.Differing, len(d.Differences), len(d.Metrics))
	}
	if !strings.Contains(string(d.Differences[0].A), `"node":`) && !strings.Contains(string(d.Differences[0].B), `"node":`) {
		t.Fatalf("difference without decisions: %+v", d.Differences[0])
	}
}

func TestReplayCommandErrors(t *testing.T) {
	dir := recordForReplay(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace", dir, "--scheduler", "nope"}, `unknown scheduler "nope"`},
		{[]string{"--trace", dir, "--diff", "nope"}, `--diff: unknown scheduler "nope"`},
		{[]string{"--trace", dir, "--governor", "mine"}, `--governor: governor "mine"`},
		{[]string{"--trace", dir, "--limit", "-1"}, "--limit -1"},
		{[]string{"--trace", filepath.Join(dir, "missing")}, "open trace"},
		{[]string{}, `required flag(s) "trace" not set`},
	} {
		if _, _, err := run(t, append([]string{"replay"}, c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("replay %v: error %v, want %q", c.args, err, c.want)
		}
	}

	// Recorded metrics that the replay does not give: it says which, and
	// fails.
	p := filepath.Join(dir, "run.json")
	b, _ := os.ReadFile(p)
	b = regexp.MustCompile(`"ticks":\d+`).ReplaceAll(b, []byte(`"ticks":1`))
	os.WriteFile(p, b, 0o644)
	stdout, _, err := run(t, "replay", "--trace", dir, "--log-level", "warn")
	if err == nil || !strings.Contains(err.Error(), "metrics differ: ticks") || !strings.Contains(stdout, "reproduced  NO: all ") {
		t.Fatalf("altered metrics: %v\n%s", err, stdout)
	}

	// A truncated transitions file.
	p = filepath.Join(dir, "transitions.arrow")
	b, _ = os.ReadFile(p)
	os.WriteFile(p, b[:len(b)/2], 0o644)
	if _, _, err := run(t, "replay", "--trace", dir); err == nil || !strings.Contains(err.Error(), "transitions.arrow: not a readable Arrow IPC file") {
		t.Fatalf("truncated trace: %v", err)
	}
}
