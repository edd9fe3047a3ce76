package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Hand-made trace: three GPU machines and one CPU-only machine (which
// saturate must drop), and pods of every kind (share, whole, multi-GPU,
// model-restricted, CPU-only).
const (
	testNodes = `sn,cpu_milli,memory_mib,gpu,model
n0,32000,65536,2,V100
n1,32000,65536,2,V100
n2,64000,131072,4,T4
n3,16000,32768,0,
`
	testPods = `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
p0,4000,8192,1,500,,LS,Running,0,100,0
p1,8000,8192,1,1000,,BE,Running,1,100,1
p2,2000,4096,1,250,V100,LS,Running,2,100,2
p3,16000,16384,2,1000,,Burstable,Running,3,100,3
p4,1000,2048,0,0,,BE,Running,4,100,4
p5,4000,8192,1,700,,LS,Running,5,100,5
p6,6000,8192,1,300,T4,Guaranteed,Running,6,100,6
`
)

func writeTrace(t *testing.T) (nodes, pods string) {
	t.Helper()
	dir := t.TempDir()
	nodes, pods = filepath.Join(dir, "nodes.csv"), filepath.Join(dir, "pods.csv")
	if err := os.WriteFile(nodes, []byte(testNodes), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pods, []byte(testPods), 0o644); err != nil {
		t.Fatal(err)
	}
	return nodes, pods
}

func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = execute(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestSaturateJSON(t *testing.T) {
	nodes, pods := writeTrace(t)
	args := []string{"saturate", "--nodes", nodes, "--pods", pods, "--scheduler", "fgd", "--seeds", "1-3", "--json", "--log-level", "warn"}
	out1, stderr, err := run(t, args...)
	if err != nil {
		t.Fatalf("saturate: %v\nstderr: %s", err, stderr)
	}
	if stderr != "" {
		t.Errorf("stderr at --log-level warn: %q", stderr)
	}
	if n := strings.Count(out1, "\n"); n != 1 {
		t.Fatalf("one scheduler: %d lines of JSON, want 1:\n%s", n, out1)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out1), &m); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out1)
	}
	for _, k := range []string{"scheduler", "seeds", "alloc_at_130_mean", "alloc_at_130_std", "frag_at_130_mean", "frag_ratio_at_130_mean", "dropped_mean", "bins"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks key %q", k)
		}
	}
	if m["scheduler"] != "fgd" {
		t.Errorf("scheduler = %v", m["scheduler"])
	}
	if seeds, _ := json.Marshal(m["seeds"]); string(seeds) != "[1,2,3]" {
		t.Errorf("seeds = %s, want [1,2,3]", seeds)
	}
	bins, _ := m["bins"].([]any)
	if len(bins) != 131 {
		t.Fatalf("%d bins, want 131", len(bins))
	}
	for i, b := range bins {
		bm := b.(map[string]any)
		for _, k := range []string{"arrival_pct", "alloc_mean", "alloc_std", "frag_pct_mean"} {
			if _, ok := bm[k]; !ok {
				t.Fatalf("bin %d lacks key %q", i, k)
			}
		}
		if bm["arrival_pct"] != float64(i) {
			t.Fatalf("bin %d has arrival_pct %v", i, bm["arrival_pct"])
		}
	}

	// Same flags, different parallelism: identical bytes.
	out2, _, err := run(t, append(args, "--workers", "1")...)
	if err != nil {
		t.Fatal(err)
	}
	if out1 != out2 {
		t.Errorf("two runs differ:\n%s\n%s", out1, out2)
	}
}

func TestSaturateTextAndFiles(t *testing.T) {
	nodes, pods := writeTrace(t)
	dir := t.TempDir()
	png, md := filepath.Join(dir, "sat.png"), filepath.Join(dir, "sat.md")
	out, stderr, err := run(t, "saturate", "--nodes", nodes, "--pods", pods, "--scheduler", "all", "--seeds", "7,9",
		"--plot", png, "--out-md", md, "--log-format", "json")
	if err != nil {
		t.Fatalf("saturate: %v\nstderr: %s", err, stderr)
	}
	for _, s := range []string{"random", "bestfit", "dotprod", "packing", "clustering", "fgd"} {
		if !strings.Contains(out, "== "+s+"  (seeds 7,9, n=2") {
			t.Errorf("text output lacks the %s table:\n%s", s, out)
		}
	}
	if !strings.Contains(out, "== summary at 130% arrival") {
		t.Errorf("text output lacks the summary:\n%s", out)
	}
	if !strings.HasPrefix(stderr, `{"time":`) {
		t.Errorf("--log-format json: stderr starts %q", stderr[:min(len(stderr), 40)])
	}
	data, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("plot: %v, %d bytes", err, len(data))
	}
	mdText, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mdText), "| rank | scheduler |") || !strings.Contains(string(mdText), "tegrl saturate --nodes "+nodes) {
		t.Errorf("markdown:\n%s", mdText)
	}
}

func TestSaturateErrors(t *testing.T) {
	nodes, pods := writeTrace(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--seeds", "9-1"}, "--seeds: "},
		{[]string{"--seeds", "x"}, `"x" is not a seed`},
		{[]string{"--scheduler", "nope"}, `--scheduler: scheduler list "nope": unknown scheduler`},
		{[]string{"--tune", "0"}, "--tune 0: want a positive number"},
		{[]string{"--workers", "-1"}, "--workers -1"},
		{[]string{"--nodes", "/no/such/nodes.csv"}, "--nodes /no/such/nodes.csv: no such file"},
		{[]string{"--pods", t.TempDir()}, "is a directory"},
		{[]string{"--log-level", "loud"}, `--log-level "loud"`},
		{[]string{"--log-format", "xml"}, `--log-format "xml"`},
	} {
		args := append([]string{"saturate", "--nodes", nodes, "--pods", pods, "--seeds", "1"}, tc.args...)
		_, _, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error = %v, want it to contain %q", tc.args, err, tc.want)
		}
	}
}

func TestHelpMentionsCommands(t *testing.T) {
	out, _, err := run(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"saturate", "train", "actor", "broker", "ab", "dataset", "replay", "serve", "lookahead", "--log-level", "--log-format"} {
		if !strings.Contains(out, s) {
			t.Errorf("tegrl --help lacks %q", s)
		}
	}
}

// TestScenarioFlagsNeedScenario: a GPU scenario's flag on a run without
// --scenario is refused, not ignored, on every command that takes them;
// with --scenario a bad allocation interval is an error too.
func TestScenarioFlagsNeedScenario(t *testing.T) {
	for _, args := range [][]string{
		{"simulate", "--machines", "20", "--duration", "1m", "--allocation-interval-s", "360"},
		{"simulate", "--machines", "20", "--duration", "1m", "--restore-s", "30"},
		{"ab", "--b", "fgd", "--seeds", "1", "--machines", "20", "--rate", "2"},
		{"tune", "--placement", "pack"},
		{"dataset", "record", "--out", t.TempDir(), "--allocation-interval-s", "60"},
	} {
		_, _, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), "applies to a GPU training cluster: give --scenario too") {
			t.Errorf("%v: error = %v", args, err)
		}
	}
	_, _, err := run(t, "simulate", "--scenario", "gavel-multi", "--rate", "1", "--allocation-interval-s", "-1")
	if err == nil || !strings.Contains(err.Error(), "allocation interval -1 s") {
		t.Errorf("negative interval: %v", err)
	}
}
