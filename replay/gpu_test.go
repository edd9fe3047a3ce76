package replay

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/datasets"
)

func recordGPU(t *testing.T, cfg GPURunConfig) (string, *GPURecording) {
	t.Helper()
	dir := t.TempDir()
	rec, err := RecordGPU(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dir, rec
}

// TestGPUReplayReproduces: the recorded policy on the recorded jobs gives
// every allocation row and the metrics byte for byte; another policy runs
// on the same jobs.
func TestGPUReplayReproduces(t *testing.T) {
	dir, rec := recordGPU(t, GPURunConfig{Scenario: "gavel-multi", Rate: 1.6, Policy: "tiresias", Seed: 2})
	if rec.Jobs == 0 || rec.Allocations == 0 || rec.Metrics.AvgJCT == nil || !IsGPURecording(dir) {
		t.Fatalf("recording %+v", rec)
	}
	r, err := ReplayGPU(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Verified || !r.Reproduced || r.Divergence != nil || r.Failure() != nil {
		t.Fatalf("replay %+v", r)
	}
	a, _ := json.Marshal(r.Recorded)
	b, _ := json.Marshal(r.Replayed)
	if !bytes.Equal(a, b) {
		t.Fatalf("metrics\n%s\n%s", a, b)
	}
	o, err := ReplayGPU(dir, "max_min_fairness")
	if err != nil {
		t.Fatal(err)
	}
	if o.Verified || o.Replayed.Scheduler != "max_min_fairness" || *o.Replayed.AvgJCT == *o.Recorded.AvgJCT || o.Failure() != nil {
		t.Fatalf("other policy %+v", o)
	}
	var text strings.Builder
	if err := r.WriteText(&text); err != nil || !strings.HasPrefix(text.String(), "reproduced:") {
		t.Fatalf("%s %v", text.String(), err)
	}
}

// TestGPUReplayAllocationInterval: a recording made with another
// allocation interval keeps it, and replays byte for byte; the interval
// changes the run.
func TestGPUReplayAllocationInterval(t *testing.T) {
	cfg := GPURunConfig{Scenario: "gavel-multi", Rate: 1.6, Policy: "tiresias", Seed: 2, AllocationSeconds: 360}
	dir, rec := recordGPU(t, cfg)
	r, err := ReplayGPU(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Verified || !r.Reproduced || r.Failure() != nil || r.Recorded.AvgJCT == nil {
		t.Fatalf("replay %+v", r)
	}
	_, def := recordGPU(t, GPURunConfig{Scenario: "gavel-multi", Rate: 1.6, Policy: "tiresias", Seed: 2})
	if *def.Metrics.AvgJCT == *rec.Metrics.AvgJCT || rec.Config.AllocationSeconds != 360 {
		t.Fatalf("interval 360 s: %v h, config %+v; Gavel's: %v h", *rec.Metrics.AvgJCT, rec.Config, *def.Metrics.AvgJCT)
	}
}

// TestGPUReplayDetectsTampering: a recording whose allocations were
// changed is reported at the first changed row, and fails.
func TestGPUReplayDetectsTampering(t *testing.T) {
	dir, _ := recordGPU(t, GPURunConfig{Scenario: "gavel-single", Rate: 2.0, Policy: "fifo_perf", Seed: 0})
	path := filepath.Join(dir, GPUAllocationsFile)
	rd, err := datasets.OpenAllocations(path, datasets.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rows []datasets.Allocation
	for rd.Next() {
		rows = append(rows, rd.Batch()...)
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	rd.Close()
	const k = 7
	rows[k].Fraction /= 2
	w, err := datasets.CreateAllocations(path, datasets.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range rows {
		if err := w.Append(a); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := ReplayGPU(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Reproduced || r.Divergence == nil || r.Divergence.Row != k || r.Divergence.Recorded.Fraction != rows[k].Fraction || r.Failure() == nil {
		t.Fatalf("tampered replay %+v", r.Divergence)
	}
}

func TestGPUReplayErrors(t *testing.T) {
	if _, err := ReplayGPU(t.TempDir(), ""); err == nil {
		t.Fatal("no recording: no error")
	}
	dir, _ := recordGPU(t, GPURunConfig{Scenario: "gavel-single", Rate: 2.0, Policy: "fifo", Seed: 0})
	b, _ := os.ReadFile(filepath.Join(dir, GPURunFile))
	os.WriteFile(filepath.Join(dir, GPURunFile), bytes.Replace(b, []byte(`"jobs": `), []byte(`"jobs": 1`), 1), 0o644)
	if _, err := ReplayGPU(dir, ""); err == nil || !strings.Contains(err.Error(), "do not belong together") {
		t.Fatalf("job count mismatch: %v", err)
	}
	os.WriteFile(filepath.Join(dir, GPURunFile), []byte(`{"config":{},"extra":1}`), 0o644)
	if _, err := ReplayGPU(dir, ""); err == nil {
		t.Fatal("bad gpu-run.json: no error")
	}
	if _, err := RecordGPU(t.TempDir(), GPURunConfig{Scenario: "gavel-single", Rate: 2.0, Policy: "nope"}); err == nil {
		t.Fatal("unknown policy: no error")
	}
}
