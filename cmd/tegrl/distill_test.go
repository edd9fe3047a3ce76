package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
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

// TestDistillTieredFlags: a tiered teacher takes its own flags; the
// network student's are refused, not ignored, and --out is required.
func TestDistillTieredFlags(t *testing.T) {
	teacher := "../../docs/policies/gavel-single-tiered-tail.json"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--out", t.TempDir(), "--hidden", "4"}, "--hidden does not apply to a tiered teacher"},
		{[]string{"--out", t.TempDir(), "--machines", "10"}, "--machines does not apply to a tiered teacher"},
		{nil, "--out is required"},
		{[]string{"--out", t.TempDir(), "--support-alone", "-2", "--eval-seeds", ""}, "want >= 0"},
		{[]string{"--out", t.TempDir(), "--eval-seeds", "x"}, "--eval-seeds"},
		{[]string{"--out", t.TempDir(), "--support-high-pairs", "-1", "--eval-seeds", ""}, "want >= 0"},
		{[]string{"--out", t.TempDir(), "--support-max-log-load", "1e9", "--eval-seeds", ""}, "want a log load within ±10"},
		{[]string{"--teacher", "../../docs/policies/small.safetensors", "--out", t.TempDir(), "--support-high-pairs", "5"}, "--support-high-pairs applies to a tiered teacher only"},
		{[]string{"--teacher", "../../docs/policies/small.safetensors", "--out", t.TempDir(), "--scenario", "spot/16-single"}, "--scenario applies to a tiered teacher only"},
		{[]string{"--out", t.TempDir(), "--scenario", "spot/16-single"}, "needs --train-loads"},
		{[]string{"--out", t.TempDir(), "--eval-loads", "0.5"}, "--eval-loads needs --train-loads"},
		{[]string{"--out", t.TempDir(), "--train-loads", "x"}, "train-loads"},
	} {
		_, _, err := run(t, append([]string{"distill", "--teacher", teacher}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
