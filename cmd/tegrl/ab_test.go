package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// abArgs is a small comparison: 32 machines, 2 seeds, 1 simulated hour.
func abArgs(extra ...string) []string {
	return append([]string{"ab", "--b", "fgd", "--machines", "32", "--seeds", "1-2", "--duration", "1h",
		"--ref", "kube,bestfit", "--log-level", "warn"}, extra...)
}

// TestABJSONAndFiles: --json prints exactly one JSON object with the
// promised keys, --out writes the same object, the Markdown report and the
// plots, and the report is byte-identical whatever the parallelism.
func TestABJSONAndFiles(t *testing.T) {
	dir1 := filepath.Join(t.TempDir(), "new", "dir") // created by ab
	out, stderr, err := run(t, abArgs("--json", "--out", dir1)...)
	if err != nil {
		t.Fatalf("ab: %v\nstderr: %s", err, stderr)
	}
	if stderr != "" {
		t.Errorf("stderr at --log-level warn: %q", stderr)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	var obj map[string]json.RawMessage
	if err := dec.Decode(&obj); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, out)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Errorf("stdout has more than one JSON value: %v", err)
	}
	for _, k := range []string{"a", "b", "seeds", "metrics", "reference", "setup"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if string(obj["a"]) != `"langevin"` || string(obj["b"]) != `"fgd"` || string(obj["seeds"]) != "[1,2]" {
		t.Errorf("a %s, b %s, seeds %s", obj["a"], obj["b"], obj["seeds"])
	}
	var metrics map[string]map[string]any
	if err := json.Unmarshal(obj["metrics"], &metrics); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mean_slowdown", "mean_jct_s", "util_gpu", "energy_kwh", "reward_mean", "jobs_submitted"} {
		for _, k := range []string{"a_mean", "b_mean", "diff_mean", "ci_low", "ci_high", "verdict"} {
			if _, ok := metrics[name][k]; !ok {
				t.Errorf("metrics.%s lacks %q", name, k)
			}
		}
	}
	var refs []struct{ Scheduler string }
	if err := json.Unmarshal(obj["reference"], &refs); err != nil || len(refs) != 2 || refs[0].Scheduler != "kube" || refs[1].Scheduler != "bestfit" {
		t.Errorf("reference %s: %v", obj["reference"], err)
	}

	saved, err := os.ReadFile(filepath.Join(dir1, "report.json"))
	if err != nil || string(saved) != out {
		t.Errorf("report.json (%v) differs from stdout", err)
	}
	for _, f := range []string{"report.md", "cdf_jct.png", "cdf_slowdown.png", "utilisation.png", "gpu_fragmentation.png", "damping.png", "queue.png"} {
		if st, err := os.Stat(filepath.Join(dir1, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir1, "report.md"))
	for _, s := range []string{"tegrl ab --b fgd --machines 32", "| metric | better | A mean |", "| kube |", "](cdf_jct.png)"} {
		if !bytes.Contains(md, []byte(s)) {
			t.Errorf("report.md lacks %q", s)
		}
	}

	// Same flags, one worker: the same report (stdout is report.json).
	again, stderr, err := run(t, abArgs("--json", "--workers", "1")...)
	if err != nil {
		t.Fatalf("ab --workers 1: %v\n%s", err, stderr)
	}
	if again != string(saved) {
		t.Errorf("report differs between runs:\n%s\n%s", saved, again)
	}
}

func TestABText(t *testing.T) {
	out, stderr, err := run(t, "ab", "--a", "bestfit", "--b", "kube", "--machines", "32", "--seeds", "3-4", "--duration", "30m",
		"--ref", "", "--log-level", "warn")
	if err != nil {
		t.Fatalf("ab: %v\n%s", err, stderr)
	}
	for _, s := range []string{"A = bestfit, B = kube, seeds 3-4 (n=2), 10000 bootstrap resamples", "metric", "95% CI of B - A", "mean_slowdown", "lower"} {
		if !strings.Contains(out, s) {
			t.Errorf("text output lacks %q:\n%s", s, out)
		}
	}
}

func TestABErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ab", "--machines", "8"}, "--b is required"},
		{abArgs("--b", "nope"), `--b: unknown scheduler "nope"`},
		{abArgs("--a", "nope.safetensors"), `--a: scheduler "nope.safetensors": open nope.safetensors: no such file`},
		{abArgs("--ref", "kube,nope"), `--ref: unknown scheduler "nope"`},
		{abArgs("--ref", "kube,kube"), `repeated name "kube"`},
		{abArgs("--seeds", "0"), "--seeds: seeds \"0\": a bare number is one seed"},
		{abArgs("--seeds", "101"), "write 1-101 for seeds 1 to 101, or 101-101 for that one seed"},
		{abArgs("--seeds", "5-1"), "runs backwards"},
		{abArgs("--level", "1"), "--level 1"},
		{abArgs("--resamples", "0"), "--resamples 0"},
		{abArgs("--series-every", "0"), "--series-every 0"},
		{abArgs("--workers", "-2"), "--workers -2"},
		{abArgs("--duration", "soon"), `--duration: duration "soon"`},
		{abArgs("--cluster", "nowhere:x"), `--cluster: cluster "nowhere:x"`},
		{abArgs("--workload", "alibaba-gpu:/no/such/pods.csv"), "load workload alibaba-gpu:/no/such/pods.csv"},
	} {
		_, _, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error = %v, want it to contain %q", tc.args, err, tc.want)
		}
	}
}
