package main

import (
	"strings"
	"testing"
)

// TestDatasetFetchCommand: an unknown name lists the datasets; a missing
// argument is refused; the help names every dataset and the cache.
func TestDatasetFetchCommand(t *testing.T) {
	_, _, err := run(t, "dataset", "fetch", "nope", "--dir", t.TempDir(), "--log-level", "warn")
	if err == nil || !strings.Contains(err.Error(), `unknown dataset "nope" (have all, alibaba-gpu-v2023, alibaba-gpu-v2020, alibaba-gpu-v2026-spot, alibaba-v2018, philly)`) {
		t.Fatalf("unknown dataset: %v", err)
	}
	if _, _, err := run(t, "dataset", "fetch"); err == nil {
		t.Fatal("fetch without a name accepted")
	}
	out, _, err := run(t, "dataset", "fetch", "--help")
	if err != nil || !strings.Contains(out, "SHA256SUMS") || !strings.Contains(out, "philly") {
		t.Fatalf("help: %v\n%s", err, out)
	}
}
