package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tegrl/tegrl/distill"
)

// TestDistillCommand: a tiny distillation of the committed policy writes a
// student that loads as a scheduler, and a summary with the agreement,
// latencies and the held-out comparison.
func TestDistillCommand(t *testing.T) {
	dir := t.TempDir()
	out, stderr, err := run(t, "distill", "--teacher", "../../docs/policies/small.safetensors", "--decisions", "200", "--epochs", "2",
		"--machines", "24", "--episode", "900", "--eval-seeds", "1", "--out", dir, "--json", "--log-level", "warn")
	if err != nil {
		t.Fatalf("distill: %v\n%s", err, stderr)
	}
	var sum distill.Summary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("summary: %v\n%s", err, out)
	}
	if sum.Decisions != 200 || len(sum.Log) != 2 || len(sum.Eval) != 3 || sum.Params["student"] >= sum.Params["teacher"] || sum.ReturnRatio <= 0 {
		t.Fatalf("summary %+v", sum)
	}
	if _, err := os.Stat(filepath.Join(dir, "policy.safetensors")); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := run(t, "simulate", "--scheduler", dir, "--machines", "24", "--duration", "10m", "--log-level", "warn"); err != nil {
		t.Fatalf("the student as a scheduler: %v\n%s", err, stderr)
	}
}

// TestDistillOnlineCommand: --online runs the act-label-refit loop over an
// embedded NATS server.
func TestDistillOnlineCommand(t *testing.T) {
	out, stderr, err := run(t, "distill", "--teacher", "../../docs/policies/small.safetensors", "--online", "--rounds", "2",
		"--decisions", "400", "--epochs", "2", "--machines", "24", "--episode", "900", "--eval-seeds", "", "--out", t.TempDir(),
		"--json", "--log-level", "warn")
	if err != nil {
		t.Fatalf("distill --online: %v\n%s", err, stderr)
	}
	var sum distill.Summary
	if err := json.Unmarshal([]byte(out), &sum); err != nil || len(sum.Log) != 2 {
		t.Fatalf("summary (%v): %s", err, out)
	}
}
