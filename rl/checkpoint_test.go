package rl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestResumeIdentical: a run interrupted after its second update and
// resumed from the checkpoint gives the same log and the same final
// weights as the uninterrupted run (one in-process actor, sync mode).
func TestResumeIdentical(t *testing.T) {
	base := tinyTrain("chan", 1, true)
	base.TotalSteps = 1000 // 5 updates
	base.CheckpointEvery = 2

	full := base
	full.CheckpointDir = filepath.Join(t.TempDir(), "full")
	want, err := Train(context.Background(), full)
	if err != nil {
		t.Fatal(err)
	}
	wantW, _ := want.Learner.Pol.EncodeParams(nil)

	cut := base
	cut.CheckpointDir = filepath.Join(t.TempDir(), "cut")
	ctx, cancel := context.WithCancel(context.Background())
	cut.Progress = func(l UpdateLog) {
		if l.Update == 2 {
			cancel()
		}
	}
	if _, err := Train(ctx, cut); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join(cut.CheckpointDir, ckptState))
	if err != nil {
		t.Fatal(err)
	}
	var st learnerState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	if st.Updates != 2 || st.Actor == nil || len(st.Actor.Actions) == 0 {
		t.Fatalf("checkpoint: %d updates, actor %+v: want 2 and an episode in progress to replay", st.Updates, st.Actor)
	}
	t.Logf("checkpoint at update %d: actor in episode %d after %d actions", st.Updates, st.Actor.Episode, len(st.Actor.Actions))
	resumed := base
	resumed.Transport = "nats" // the transport is not part of the run's numbers
	resumed.Resume = cut.CheckpointDir
	got, err := Train(context.Background(), resumed)
	if err != nil {
		t.Fatal(err)
	}
	gl, wl := stable(got.Log), stable(want.Log)
	if len(gl) != len(wl) {
		t.Fatalf("%d updates, want %d", len(gl), len(wl))
	}
	for i := range wl {
		if gl[i] != wl[i] {
			t.Fatalf("update %d differs after resume:\n got  %+v\n want %+v", i+1, gl[i], wl[i])
		}
	}
	gotW, _ := got.Learner.Pol.EncodeParams(nil)
	if !bytes.Equal(gotW, wantW) {
		t.Fatal("final weights differ after resume")
	}

	// A checkpoint of another configuration is refused.
	other := base
	other.Seed++
	other.Resume = cut.CheckpointDir
	if _, err := Train(context.Background(), other); err == nil {
		t.Fatal("resumed a checkpoint with another configuration")
	}
}
