package gnn

import (
	"fmt"
	"testing"

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
	tp.Backward(loss)
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

func BenchmarkEncoderForward(b *testing.B) {
	for _, m := range benchMachines {
		b.Run(fmt.Sprintf("machines=%d", m), func(b *testing.B) {
			g := benchSynthetic(b, m)
			be := newBenchEncoder(b, g)
			be.forward()
			b.ReportAllocs()
			for b.Loop() {
				be.forward()
			}
			reportPerNode(b, g)
		})
	}
}

func BenchmarkEncoderForwardBackward(b *testing.B) {
	for _, m := range benchMachines {
		b.Run(fmt.Sprintf("machines=%d", m), func(b *testing.B) {
			g := benchSynthetic(b, m)
			be := newBenchEncoder(b, g)
			be.step()
			b.ReportAllocs()
			for b.Loop() {
				be.step()
			}
			reportPerNode(b, g)
		})
	}
}
