package rl

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/env"
)

// TestSaturateRunErrors: the command's checks fail before any run, naming
// the flag.
func TestSaturateRunErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "pods.csv")
	ok := SaturateRun{Nodes: "alibaba-gpu", Pods: "alibaba-gpu", Schedulers: "fgd", Seeds: "1", Tune: 1.3}
	for _, c := range []struct {
		edit func(*SaturateRun)
		want string
	}{
		{func(r *SaturateRun) { r.Schedulers = "fgd,langevin" }, "--scheduler langevin: the Langevin governor"},
		{func(r *SaturateRun) { r.Seeds = "q" }, `--seeds: seed list "q"`},
		{func(r *SaturateRun) { r.Tune = 0 }, "--tune 0: want a positive number (the protocol uses 1.3)"},
		{func(r *SaturateRun) { r.Workers = -1 }, "--workers -1: want 0 (GOMAXPROCS) or more"},
		{func(r *SaturateRun) { r.Pods = "alibaba-gpu:" + missing }, "--pods " + missing + ": no such file"},
	} {
		r := ok
		c.edit(&r)
		var out bytes.Buffer
		err := RunSaturate(context.Background(), r, &out)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q...", r, err, c.want)
		}
		if out.Len() != 0 {
			t.Errorf("%+v: printed %q", r, out.String())
		}
	}
}

// TestTrainOptionsConfig: only the settings given override the preset.
func TestTrainOptionsConfig(t *testing.T) {
	given := map[string]bool{"steps": true, "encoder": true}
	o := TrainOptions{Preset: "small", Out: "dir", Steps: 1234, Batch: 99, Encoder: "mlp", Seed: 7, CheckpointEvery: 3,
		EvalSeeds: "1-2", EvalRefs: "fgd, ,kube", Set: func(f string) bool { return given[f] }}
	cfg, err := o.config()
	if err != nil {
		t.Fatal(err)
	}
	def, _ := Preset("small")
	if cfg.TotalSteps != 1234 || cfg.BatchSize != def.BatchSize || cfg.Policy.Encoder != "" || cfg.Seed != 7 {
		t.Errorf("steps %d batch %d encoder %q seed %d; want 1234, the preset's %d, \"\", 7", cfg.TotalSteps, cfg.BatchSize, cfg.Policy.Encoder, cfg.Seed, def.BatchSize)
	}
	if cfg.CheckpointDir != filepath.Join("dir", "checkpoint") || cfg.CheckpointEvery != 3 {
		t.Errorf("checkpoints %q every %d", cfg.CheckpointDir, cfg.CheckpointEvery)
	}
	seeds, refs, err := o.evalSets()
	if err != nil || len(seeds) != 2 || strings.Join(refs, ",") != "fgd,kube" {
		t.Errorf("eval sets %v %v %v; want 2 seeds and fgd,kube", seeds, refs, err)
	}
	o.EvalRefs = "fgd,nope"
	if _, _, err := o.evalSets(); err == nil || !strings.HasPrefix(err.Error(), "--eval-ref: ") {
		t.Errorf("unknown eval ref: %v", err)
	}
	sat := TrainOptions{Preset: "saturate", Nodes: "alibaba-gpu", Pods: "alibaba-gpu", EvalSeeds: "1", Set: func(string) bool { return false }}
	if _, err := sat.config(); err != nil || sat.EvalSeeds != SaturateEvalSeeds {
		t.Errorf("saturate: eval seeds %q, %v; want %q", sat.EvalSeeds, err, SaturateEvalSeeds)
	}
	sat.Offline = "rec"
	if _, err := sat.config(); err == nil || err.Error() != "--preset saturate learns online only" {
		t.Errorf("saturate offline: %v", err)
	}
	if err := (TrainOptions{}).Run(context.Background(), &bytes.Buffer{}); err == nil || err.Error() != "--out DIR is required" {
		t.Errorf("no --out: %v", err)
	}
}

// TestWriteSummaryJSON: indented, with a final newline.
func TestWriteSummaryJSON(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSummaryJSON(&b, map[string]int{"a": 1}); err != nil || b.String() != "{\n  \"a\": 1\n}\n" {
		t.Errorf("%q, %v", b.String(), err)
	}
}

func TestLookaheadRunErrors(t *testing.T) {
	ok := LookaheadRun{Base: "fgd", Seeds: "1", Every: 1, Candidates: 4, TEG: func(s env.Scheduler) (env.TEGConfig, error) { return env.GovernorFor(s), nil }}
	for _, c := range []struct {
		edit func(*LookaheadRun)
		want string
	}{
		{func(r *LookaheadRun) { r.Every = 0 }, "--every must be >= 1, --candidates >= 2 and --support in [0, 1]"},
		{func(r *LookaheadRun) { r.Support = 1.5 }, "--every must be >= 1, --candidates >= 2 and --support in [0, 1]"},
		{func(r *LookaheadRun) { r.Base = "nope" }, "--base: "},
		{func(r *LookaheadRun) { r.Seeds = "" }, "--seeds: "},
		{func(r *LookaheadRun) { r.Source.Cluster = "nope" }, `cluster "nope"`},
	} {
		r := ok
		c.edit(&r)
		if err := RunLookahead(context.Background(), r, &bytes.Buffer{}); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q...", r, err, c.want)
		}
	}
}
