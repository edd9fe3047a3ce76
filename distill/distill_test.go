package distill

import (
	"context"
	"testing"

	"github.com/tegrl/tegrl/rl"
)

// TestDistill: a width-4 student trained on a teacher's decisions agrees
// with it more than a fresh one does, and its loss falls; same seed, same
// student.
func TestDistill(t *testing.T) {
	tcfg := rl.PolicyConfig{Candidates: 8, Hidden: 16, DampingMax: 2, ReplicaZeroBias: 4}
	teacher, err := rl.NewPolicy(tcfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	// A teacher with decided preferences: scale its scorer up.
	for i := 0; i < teacher.Params().Len(); i++ {
		if teacher.Params().Name(i) == "score.1.weight" {
			for k := range teacher.Params().At(i).Data {
				teacher.Params().At(i).Data[k] *= 300
			}
		}
	}
	spec := rl.EnvSpec{Machines: 32, Load: 0.9, Episode: 1800}
	s, err := Collect(context.Background(), teacher, spec, 600, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig(tcfg)
	cfg.Student.Hidden, cfg.Epochs = 4, 8
	fresh, _ := rl.NewPolicy(cfg.Student, cfg.Seed)
	before := Agreement(teacher, fresh, s)
	student, log, err := Train(teacher, s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	first, last := log[0], log[len(log)-1]
	t.Logf("agreement %.3f (fresh) -> %.3f; KL %.4f -> %.4f", before, last.Agreement, first.KL, last.KL)
	if !(last.Agreement > before) || !(last.KL < first.KL) {
		t.Fatalf("the student did not learn: fresh %.3f, %+v -> %+v", before, first, last)
	}
	again, _, _ := Train(teacher, s, cfg)
	a, _ := student.EncodeParams(nil)
	b, _ := again.EncodeParams(nil)
	if string(a) != string(b) {
		t.Fatal("same seed, different student")
	}
	bad := cfg
	bad.Student.Candidates = 16
	if _, _, err := Train(teacher, s, bad); err == nil {
		t.Fatal("a student with another candidate count was accepted")
	}
}

// TestOnline: the student acts, its decisions come back over the
// transport (channels, then NATS), the teacher labels them and the
// student's agreement with the teacher on them rises.
func TestOnline(t *testing.T) {
	tcfg := rl.PolicyConfig{Candidates: 8, Hidden: 16, DampingMax: 2, ReplicaZeroBias: 4}
	teacher, err := rl.NewPolicy(tcfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < teacher.Params().Len(); i++ {
		if teacher.Params().Name(i) == "score.1.weight" {
			for k := range teacher.Params().At(i).Data {
				teacher.Params().At(i).Data[k] *= 300
			}
		}
	}
	for _, nats := range []bool{false, true} {
		cfg := OnlineConfig{Config: DefaultConfig(tcfg), Env: rl.EnvSpec{Machines: 32, Load: 0.9, Episode: 1800},
			Rounds: 3, Decisions: 200, SegmentLen: 50, RunID: "distill", UseNATS: nats}
		cfg.Student.Hidden, cfg.Epochs = 8, 6
		_, log, err := Online(context.Background(), teacher, cfg)
		if err != nil {
			t.Fatalf("nats %v: %v", nats, err)
		}
		if len(log) != 3 {
			t.Fatalf("nats %v: %d rounds", nats, len(log))
		}
		t.Logf("nats %v: agreement by round %.3f %.3f %.3f", nats, log[0].Agreement, log[1].Agreement, log[2].Agreement)
		if !(log[2].Agreement > 0.2) {
			t.Fatalf("nats %v: the student did not learn: %+v", nats, log)
		}
	}
}
