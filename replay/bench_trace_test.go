package replay

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tegrl/tegrl/datasets"
	"github.com/tegrl/tegrl/env"
)

// benchTrace records, once per test binary, an fgd run of the given size
// (synthetic cluster and bursty workload, 20 simulated minutes, machines
// failing every 2 hours on average) and opens it.
func benchTrace(b *testing.B, machines int) (tr *Trace, decisions, size int64) {
	b.Helper()
	v, _ := recordOnce.LoadOrStore(fmt.Sprintf("bench-%d", machines), &recording{})
	r := v.(*recording)
	r.once.Do(func() {
		if r.dir, r.err = os.MkdirTemp("", "tegrl-replay-bench-"); r.err != nil {
			return
		}
		c, err := env.NewSyntheticCluster(machines, 1)
		if err != nil {
			r.err = err
			return
		}
		wc := env.DefaultWorkload
		wc.Horizon = 1200
		w, err := env.NewSyntheticWorkload(c, wc, 1)
		if err != nil {
			r.err = err
			return
		}
		sim := env.SimConfig{Seed: 1, Duration: 1200, MTBF: 7200, MTTR: 600}
		r.res, r.err = datasets.RecordRun(context.Background(), r.dir, c, w, newSched(b, "fgd"), datasets.RecordConfig{RunID: "bench", Sim: sim})
	})
	if r.err != nil {
		b.Fatal(r.err)
	}
	st, err := os.Stat(filepath.Join(r.dir, datasets.TransitionsFile))
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d decisions, transitions.arrow %.1f MB", r.res.Transitions, float64(st.Size())/1e6)
	return openTrace(b, r.dir), r.res.Transitions, st.Size()
}

// BenchmarkReplay replays a recorded fgd run with verification: the
// simulation, the logging wrapper, and the comparison with the recorded
// decisions streamed from transitions.arrow (whose rows, with their
// observations, are read and checked: that is most of the time).
// decisions/s is the rate of replayed and checked decisions.
func BenchmarkReplay(b *testing.B) {
	benchReplay(b, VerifyAlways)
}

// BenchmarkReplayNoVerify is the same replay without reading the
// recording: the simulation and the wrapper alone.
func BenchmarkReplayNoVerify(b *testing.B) {
	benchReplay(b, VerifyNever)
}

func benchReplay(b *testing.B, verify VerifyMode) {
	for _, machines := range []int{128} {
		b.Run(fmt.Sprintf("machines=%d", machines), func(b *testing.B) {
			tr, n, size := benchTrace(b, machines)
			if verify != VerifyNever {
				b.SetBytes(size) // MB/s: of the transitions file read
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				res, err := Run(context.Background(), tr, newSched(b, "fgd"), Options{Verify: verify})
				if err != nil {
					b.Fatal(err)
				}
				if res.NumDecisions != n || verify == VerifyAlways && !res.Verification.Reproduced {
					b.Fatalf("%d decisions of %d, not reproduced: %v", res.NumDecisions, n, res.Verification.Divergence)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/time.Since(start).Seconds(), "decisions/s")
		})
	}
}
