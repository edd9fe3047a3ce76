package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDatasetGenInspect(t *testing.T) {
	out := t.TempDir()
	stdout, stderr, err := run(t, "dataset", "gen", "--machines", "40", "--seed", "3", "--duration", "30m", "--out", out, "--json", "--log-level", "warn")
	if err != nil {
		t.Fatalf("gen: %v\n%s", err, stderr)
	}
	var res struct {
		Files    []string `json:"files"`
		Machines int      `json:"machines"`
		Jobs     int      `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.Machines != 40 || res.Jobs == 0 || len(res.Files) != 2 {
		t.Fatalf("gen output %q (%v)", stdout, err)
	}
	stdout, _, err = run(t, "dataset", "inspect", "--json", filepath.Join(out, "jobs.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Kind  string `json:"kind"`
		Rows  int    `json:"rows"`
		Valid bool   `json:"valid"`
	}
	if err := json.Unmarshal([]byte(stdout), &s); err != nil || s.Kind != "jobs" || s.Rows != res.Jobs || !s.Valid {
		t.Fatalf("inspect: %q (%v)", stdout, err)
	}
	stdout, _, err = run(t, "dataset", "inspect", filepath.Join(out, "machines.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind:     machines (format version 1)", "rows:     40 in 1 batches", "valid:    yes", "tegrl.topology:", "cpu_milli"} {
		if !strings.Contains(stdout, want) {
			t.Fatalf("inspect text lacks %q:\n%s", want, stdout)
		}
	}
	// Same flags, same bytes.
	out2 := t.TempDir()
	if _, _, err := run(t, "dataset", "gen", "--machines", "40", "--seed", "3", "--duration", "30m", "--out", out2, "--log-level", "warn"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"jobs.arrow", "machines.arrow"} {
		a, _ := os.ReadFile(filepath.Join(out, f))
		b, _ := os.ReadFile(filepath.Join(out2, f))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Fatalf("%s differs between two gen runs with the same flags", f)
		}
	}
}

func TestDatasetRecord(t *testing.T) {
	out := t.TempDir()
	stdout, stderr, err := run(t, "dataset", "record", "--scheduler", "kube", "--machines", "30", "--duration", "15m", "--seed", "2",
		"--out", out, "--json", "--log-level", "warn")
	if err != nil {
		t.Fatalf("record: %v\n%s", err, stderr)
	}
	var res struct {
		Transitions int `json:"transitions"`
		Metrics     struct {
			Scheduler string `json:"scheduler"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.Transitions == 0 || res.Metrics.Scheduler != "kube" {
		t.Fatalf("record output %q (%v)", stdout, err)
	}
	stdout, _, err = run(t, "dataset", "inspect", "--json", filepath.Join(out, "transitions.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Kind        string            `json:"kind"`
		Rows        int               `json:"rows"`
		Valid       bool              `json:"valid"`
		HashMatches bool              `json:"observation_schema_hash_matches"`
		Metadata    map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(stdout), &s); err != nil || s.Kind != "transitions" || s.Rows != res.Transitions || !s.Valid || !s.HashMatches {
		t.Fatalf("inspect transitions: %q (%v)", stdout, err)
	}
	if s.Metadata["tegrl.machine_features"] == "" || !strings.Contains(s.Metadata["tegrl.source"], "scheduler=kube") {
		t.Fatalf("metadata %v", s.Metadata)
	}
	if _, _, err := run(t, "dataset", "record", "--scheduler", "nope", "--out", out); err == nil || !strings.Contains(err.Error(), `unknown scheduler "nope"`) {
		t.Fatalf("unknown scheduler: %v", err)
	}
}

func TestDatasetConvert(t *testing.T) {
	nodes, _ := writeTrace(t)
	out := t.TempDir()
	stdout, stderr, err := run(t, "dataset", "convert", "--from", "alibaba-gpu:"+filepath.Dir(nodes), "--out", out, "--log-level", "warn")
	if err != nil {
		t.Fatalf("convert: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "4 machines, 7 jobs, 0 usage samples") {
		t.Fatalf("convert output %q", stdout)
	}
	if _, _, err := run(t, "dataset", "convert", "--from", "alibaba-gcp:x", "--out", out); err == nil || !strings.Contains(err.Error(), "unknown source") {
		t.Fatalf("unknown source: %v", err)
	}
	// A corrupted file: inspect prints the summary, then fails.
	p := filepath.Join(out, "jobs.arrow")
	data, _ := os.ReadFile(p)
	data[len(data)/2] ^= 0xff
	os.WriteFile(p, data, 0o644)
	if _, _, err := run(t, "dataset", "inspect", p); err == nil {
		t.Fatal("inspect of a corrupted file succeeded")
	}
}
