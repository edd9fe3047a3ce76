package gnn

import (
	"fmt"
	"testing"
	"time"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/nn"
)

// benchEncoder is the state of one encoder benchmark: a synthetic graph,
// a sampler with the default fanout, and a float32 encoder with the
// default configuration.
type benchEncoder struct {
	g, sg *Graph
	s     *Sampler
	b     Batch[float32]
	enc   *Encoder[float32]
	tp    *nn.Tape[float32]
}

func newBenchEncoder(tb testing.TB, g *Graph) *benchEncoder {
	be := &benchEncoder{g: g, sg: new(Graph), s: NewSampler(DefaultFanout, 1), tp: nn.NewTape[float32]()}
	enc, err := NewEncoder[float32](DefaultEncoderConfig(g.Dims()), 1)
	if err != nil {
		tb.Fatal(err)
	}
	be.enc = enc
	return be
}

// forward samples the graph, converts it and runs the encoder: what a
// scheduler does per decision.
func (be *benchEncoder) forward() Embeddings[float32] {
	be.tp.Reset()
	be.s.Sample(be.g, be.sg)
	be.b.Load(be.sg)
	return be.enc.Forward(be.tp, &be.b)
}

// step adds a backward pass from a scalar of all embeddings.
func (be *benchEncoder) step() {
	emb := be.forward()
	tp := be.tp
	loss := tp.SumAll(emb.Graph)
	for _, x := range emb.Node {
		loss = tp.Add(loss, tp.SumAll(x))
	}
	be.enc.Params.ZeroGrad()
	tp.BackwardLeaves(loss)
}

var benchMachines = []int{1200, 10000, 100000}

func benchSynthetic(b *testing.B, m int) *Graph {
	g, err := Synthetic(DefaultSyntheticConfig(m, 1))
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// reportPerNode adds ns/node: the time per node of every type, the figure
// that should stay flat as the graph grows.
func reportPerNode(b *testing.B, g *Graph) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(g.TotalNodes()), "ns/node")
	b.ReportMetric(float64(g.TotalNodes()), "nodes")
}

// benchPasses runs pass (the encoder's forward or forward+backward pass
// over g) once to warm the buffers, then b.N times, and reports per node
// and the products' FLOPs per pass.
func benchPasses(b *testing.B, g *Graph, backward bool) {
	be := newBenchEncoder(b, g)
	pass := func() { be.forward() }
	if backward {
		pass = be.step
	}
	pass()
	b.ReportAllocs()
	for b.Loop() {
		pass()
	}
	reportPerNode(b, g)
	// The pass's products in FLOPs: over nn's BenchmarkFMAPeak, the least
	// time they can take on one core.
	b.ReportMetric(2*float64(be.tp.MulAdds())/1e6, "MFLOP/op")
}

func BenchmarkEncoderForward(b *testing.B) {
	for _, m := range benchMachines {
		b.Run(fmt.Sprintf("machines=%d", m), func(b *testing.B) { benchPasses(b, benchSynthetic(b, m), false) })
	}
}

func BenchmarkEncoderForwardBackward(b *testing.B) {
	for _, m := range benchMachines {
		b.Run(fmt.Sprintf("machines=%d", m), func(b *testing.B) { benchPasses(b, benchSynthetic(b, m), true) })
	}
}

// BenchmarkEncoderForwardMachines is BenchmarkEncoderForward on a
// homogeneous graph: the machines and their network links only (no GPU or
// job nodes), for comparison with encoders that see machines alone. The encoder is
// the same (3 layers of 64, temporal encoder, fanout 10); its GPU and job
// rows are empty.
func BenchmarkEncoderForwardMachines(b *testing.B) {
	for _, m := range benchMachines {
		b.Run(fmt.Sprintf("machines=%d", m), func(b *testing.B) {
			cfg := DefaultSyntheticConfig(m, 1)
			cfg.CPUOnly, cfg.JobsPerMachine = true, 0
			g, err := Synthetic(cfg)
			if err != nil {
				b.Fatal(err)
			}
			benchPasses(b, g, false)
		})
	}
}

// envObservation steps a simulation of env's synthetic cluster of n
// machines for an hour of simulated time (360 ticks, the workload at its
// default load) and observes it with a pending job.
func envObservation(b *testing.B, n int) *env.Tensors {
	sim, w := envSim(b, n, 1, -1)
	var ts env.Tensors
	sim.Observe(&ts, nil) // start the load history
	for range 360 {
		sim.Step()
	}
	sim.Observe(&ts, &w.Jobs[len(w.Jobs)-1])
	return &ts
}

// BenchmarkEncoderForwardEnv is BenchmarkEncoderForward on a graph built
// from env observations of its synthetic cluster.
func BenchmarkEncoderForwardEnv(b *testing.B) {
	for _, m := range []int{1523} {
		b.Run(fmt.Sprintf("machines=%d", m), func(b *testing.B) {
			g, err := Build(envObservation(b, m))
			if err != nil {
				b.Fatal(err)
			}
			benchPasses(b, g, false)
		})
	}
}

// BenchmarkBuilderUpdate measures keeping a graph current: an Update
// after a tick of the simulation (runs-on relations changed, hardware
// relations compared) and, for reference, a build from scratch.
func BenchmarkBuilderUpdate(b *testing.B) {
	for _, m := range []int{1523} {
		ts := envObservation(b, m)
		b.Run(fmt.Sprintf("kind=incremental/machines=%d", m), func(b *testing.B) {
			inc := NewBuilder()
			if _, err := inc.Update(ts); err != nil {
				b.Fatal(err)
			}
			// Alternate between two job layouts so that every Update sees
			// changed runs-on relations, as after a tick.
			alt := &ts.Edges[env.RelRunsOnMachine]
			alt2 := env.Edges{Src: append([]int32(nil), alt.Src...), Dst: append([]int32(nil), alt.Dst...), Feat: append([]float32(nil), alt.Feat...)}
			if len(alt2.Dst) > 0 {
				alt2.Dst[0] = (alt2.Dst[0] + 1) % int32(ts.Machines)
			}
			orig := *alt
			b.ReportAllocs()
			k := 0
			for b.Loop() {
				if k++; k%2 == 0 {
					*alt = alt2
				} else {
					*alt = orig
				}
				if _, err := inc.Update(ts); err != nil {
					b.Fatal(err)
				}
			}
			*alt = orig
		})
		b.Run(fmt.Sprintf("kind=full/machines=%d", m), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Build(ts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncoderBackwardRatio measures the "forward + backward
// within 3× the forward" in one loop: blocks of forward passes alternate
// with blocks of as many forward+backward passes, on two encoders of the
// same graph, each with its own tape, so that the machine's drift (10-20%
// within minutes on these VMs) falls on both figures alike. A block is
// about 16 ms of forward passes (8 at 1,200 machines, 1 from 10,000 on).
// Where the passes fit in cache, each block starts with an untimed pass,
// so that each kind is timed warm, as in its own benchmark. It reports
// both times per pass and their ratio.
func BenchmarkEncoderBackwardRatio(b *testing.B) {
	for _, m := range benchMachines {
		b.Run(fmt.Sprintf("machines=%d", m), func(b *testing.B) {
			g := benchSynthetic(b, m)
			fwd, fb := newBenchEncoder(b, g), newBenchEncoder(b, g)
			fwd.forward()
			fb.step()
			block, warm := max(1, 9600/m), m <= 2000
			var tf, tfb time.Duration
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				if warm {
					fwd.forward()
				}
				t0 := time.Now()
				for range block {
					fwd.forward()
				}
				t1 := time.Now()
				if warm {
					fb.step()
				}
				t2 := time.Now()
				for range block {
					fb.step()
				}
				tf += t1.Sub(t0)
				tfb += time.Since(t2)
				n += block
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(tf.Nanoseconds())/float64(n)/1e6, "fwd-ms")
			b.ReportMetric(float64(tfb.Nanoseconds())/float64(n)/1e6, "fwdbwd-ms")
			b.ReportMetric(float64(tfb)/float64(tf), "ratio")
		})
	}
}
