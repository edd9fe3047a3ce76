package rl

import (
	"context"
	"io"
	"log/slog"
	"testing"
)

func tinyTrain(transport string, actors int, sync bool) TrainConfig {
	return TrainConfig{
		RunID: "test", Seed: 7, Actors: actors, SegmentLen: 50, BatchSize: 200, TotalSteps: 600, Sync: sync,
		MaxLag: 4, PPO: DefaultConfig(), Policy: PolicyConfig{Candidates: 8, Hidden: 16, DampingMax: 2, ReplicaZeroBias: 4},
		Env:       EnvSpec{Machines: 24, Load: 0.9, Episode: 900},
		Transport: transport, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// stable strips the wall-clock fields of a log.
func stable(ls []UpdateLog) []UpdateLog {
	out := append([]UpdateLog(nil), ls...)
	for i := range out {
		out[i].WallS, out[i].StepsPerS = 0, 0
	}
	return out
}

// TestTrainSyncDeterministic: one in-process actor in sync mode gives the
// same learning log on every run, over channels and over NATS alike.
func TestTrainSyncDeterministic(t *testing.T) {
	var logs [][]UpdateLog
	for _, tr := range []string{"chan", "chan", "nats"} {
		res, err := Train(context.Background(), tinyTrain(tr, 1, true))
		if err != nil {
			t.Fatalf("%s: %v", tr, err)
		}
		if len(res.Log) != 3 {
			t.Fatalf("%s: %d updates", tr, len(res.Log))
		}
		logs = append(logs, stable(res.Log))
		t.Logf("%s: last update %+v; learner %+v", tr, res.Log[2], res.Stats)
		if res.Stats.Stale != 0 || res.Stats.LostSegments != 0 || res.Log[2].BadSegments != 0 {
			t.Fatalf("%s: dropped segments %+v", tr, res.Stats)
		}
	}
	for k := 1; k < len(logs); k++ {
		for i := range logs[0] {
			if logs[k][i] != logs[0][i] {
				t.Fatalf("run %d update %d differs:\n%+v\n%+v", k, i, logs[k][i], logs[0][i])
			}
		}
	}
	if l := logs[0][0]; l.BehaviourLag != 0 || l.MeanRho < 0.999 || l.MeanRho > 1.001 {
		t.Fatalf("sync mode is on-policy: lag %v, mean rho %v", l.BehaviourLag, l.MeanRho)
	}
}

// TestTrainAsyncNATS: two IMPALA actors that never wait, over an embedded
// NATS server.
func TestTrainAsyncNATS(t *testing.T) {
	res, err := Train(context.Background(), tinyTrain("nats", 2, false))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Log) != 3 || len(res.Actors) != 2 {
		t.Fatalf("%d updates, %d actors", len(res.Log), len(res.Actors))
	}
	for _, a := range res.Actors {
		if a.SegmentsPublished == 0 || a.ParamsVersion == 0 {
			t.Fatalf("actor stats %+v", a)
		}
	}
	t.Logf("learner %+v", res.Stats)
}
