package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplayNamesChangedPolicy: a recording of a policy file stores the
// file's SHA-256; after the file is replaced in place, replay names it.
func TestReplayNamesChangedPolicy(t *testing.T) {
	src, err := os.ReadFile("../../docs/policies/small.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(t.TempDir(), "small.safetensors")
	if err := os.WriteFile(pol, src, 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, stderr, err := run(t, "dataset", "record", "--scheduler", pol, "--machines", "24", "--duration", "10m", "--seed", "4",
		"--out", out, "--log-level", "warn"); err != nil {
		t.Fatalf("record: %v\n%s", err, stderr)
	}
	stdout, _, err := run(t, "replay", "--trace", out, "--log-level", "warn")
	if err != nil || strings.Contains(stdout, "policy file") {
		t.Fatalf("replay of the unchanged file: %v\n%s", err, stdout)
	}
	// Retrained in place: here, the same file with its last byte of
	// padding or weights changed.
	changed := append([]byte(nil), src...)
	changed[len(changed)-1] ^= 0x01
	if err := os.WriteFile(pol, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, _, err = run(t, "replay", "--trace", out, "--log-level", "warn")
	note := "the policy file " + pol + " changed since the recording (SHA-256 "
	if !strings.Contains(stdout, "policy      "+note) || (err != nil && !strings.Contains(err.Error(), note)) {
		t.Fatalf("replay of the changed file: %v\n%s", err, stdout)
	}
	if err := os.Remove(pol); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, "replay", "--trace", out, "--log-level", "warn"); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("replay without the file: %v", err)
	}
}
