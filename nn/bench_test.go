package nn

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// trainer is our side of BenchmarkTrainStep: a ReLU MLP with MSE loss and
// Adam, the same model as gorgoniaTrainer.
type trainer struct {
	tp   *Tape[float32]
	ps   *Params[float32]
	mlp  *MLP[float32]
	opt  *Adam[float32]
	x, y *Tensor[float32]
}

func newTrainer(sizes []int, batch int, rng *rand.Rand) *trainer {
	ps := NewParams[float32]()
	tr := &trainer{tp: NewTape[float32](), ps: ps, mlp: NewMLP(ps, "mlp", sizes, ActReLU, rng)}
	tr.opt = NewAdam(ps, 1e-3)
	tr.x = NewTensor(randf32(rng, batch*sizes[0]), batch, sizes[0])
	tr.y = NewTensor(randf32(rng, batch*sizes[len(sizes)-1]), batch, sizes[len(sizes)-1])
	return tr
}

func (tr *trainer) step() float64 {
	tr.tp.Reset()
	tr.ps.ZeroGrad()
	loss := tr.tp.MSE(tr.mlp.Forward(tr.tp, tr.x), tr.y)
	tr.tp.Backward(loss)
	tr.opt.Step()
	return loss.Item()
}

var trainConfigs = []struct {
	sizes []int
	batch int
}{
	{[]int{64, 128, 16}, 256},
	{[]int{128, 256, 16}, 2048},
}

func sizesName(s []int) string {
	name := ""
	for i, v := range s {
		if i > 0 {
			name += "-"
		}
		name += fmt.Sprint(v)
	}
	return name
}

func BenchmarkTrainStep(b *testing.B) {
	for _, impl := range []string{"ours", "gorgonia"} {
		for _, c := range trainConfigs {
			b.Run(fmt.Sprintf("impl=%s/mlp=%s/batch=%d", impl, sizesName(c.sizes), c.batch), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 1))
				if impl == "ours" {
					tr := newTrainer(c.sizes, c.batch, rng)
					tr.step() // warm the tape's arena
					b.ReportAllocs()
					for b.Loop() {
						tr.step()
					}
					return
				}
				gt := newGorgoniaTrainer(b, c.sizes, c.batch, rng)
				gt.step(b)
				b.ReportAllocs()
				for b.Loop() {
					gt.step(b)
				}
			})
		}
	}
}

// BenchmarkAdam measures one Adam step over n float32 parameters (one
// tensor): the optimiser's share of a training step.
func BenchmarkAdam(b *testing.B) {
	for _, n := range []int{10384, 1 << 20} { // the 64-128-16 MLP's parameters; a million
		b.Run(fmt.Sprintf("params=%d", n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 1))
			ps := NewParams[float32]()
			p := ps.Add("p", NewParam[float32](n))
			copy(p.Data, randf32(rng, n))
			copy(p.Grad, randf32(rng, n))
			o := NewAdam(ps, 1e-3)
			b.ReportAllocs()
			b.SetBytes(int64(16 * n)) // parameters, gradients and both moments
			for b.Loop() {
				o.Step()
			}
		})
	}
}

// BenchmarkTanh measures the tanh activation of a 64×64 block: the
// policies' encoders are tanh MLPs.
func BenchmarkTanh(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	x := NewTensor(randf32(rng, 4096), 64, 64)
	tp := NewTape[float32]()
	b.ReportAllocs()
	b.SetBytes(4 * 4096)
	for b.Loop() {
		tp.Reset()
		tp.Activate(x, ActTanh)
	}
}

func BenchmarkMatMul(b *testing.B) {
	for _, s := range []struct{ m, k, n int }{{256, 64, 128}, {2048, 128, 256}, {256, 256, 256}, {64, 1200, 64}, {1200, 64, 64}, {131072, 64, 64}} {
		for _, tr := range []struct{ a, b bool }{{false, false}, {true, false}, {false, true}} {
			b.Run(fmt.Sprintf("m=%d/k=%d/n=%d/tA=%v/tB=%v", s.m, s.k, s.n, tr.a, tr.b), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 1))
				as, bs := []int{s.m, s.k}, []int{s.k, s.n}
				if tr.a {
					as = []int{s.k, s.m}
				}
				if tr.b {
					bs = []int{s.n, s.k}
				}
				x := NewTensor(randf32(rng, s.m*s.k), as...)
				y := NewTensor(randf32(rng, s.k*s.n), bs...)
				tp := NewTape[float32]()
				b.ReportAllocs()
				b.SetBytes(int64(4 * (s.m*s.k + s.k*s.n + s.m*s.n)))
				for b.Loop() {
					tp.Reset()
					tp.MatMul(x, y, tr.a, tr.b)
				}
				b.ReportMetric(2*float64(s.m*s.k*s.n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkSegment measures forward+backward of the segment reductions at
// GNN-like sizes: rows are edges, segments are nodes.
func BenchmarkSegment(b *testing.B) {
	for _, op := range []string{"sum", "mean", "max"} {
		for _, s := range []struct{ rows, nseg, d int }{{4096, 1024, 64}, {32768, 4096, 128}} {
			b.Run(fmt.Sprintf("op=%s/rows=%d/segments=%d/dim=%d", op, s.rows, s.nseg, s.d), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 1))
				x := NewParam[float32](s.rows, s.d)
				copy(x.Data, randf32(rng, s.rows*s.d))
				seg := make([]int, s.rows)
				for i := range seg {
					seg[i] = rng.IntN(s.nseg)
				}
				tp := NewTape[float32]()
				run := func() {
					tp.Reset()
					var y *Tensor[float32]
					switch op {
					case "sum":
						y = tp.SegmentSum(x, seg, s.nseg)
					case "mean":
						y = tp.SegmentMean(x, seg, s.nseg)
					default:
						y = tp.SegmentMax(x, seg, s.nseg)
					}
					tp.Backward(tp.SumAll(y))
				}
				run()
				b.ReportAllocs()
				for b.Loop() {
					run()
				}
			})
		}
	}
}

// TestTrainStepAllocs checks that a warm training step allocates nothing
// beyond what the BLAS does internally for large products.
func TestTrainStepAllocs(t *testing.T) {
	tr := newTrainer([]int{16, 32, 4}, 8, rand.New(rand.NewPCG(1, 1)))
	tr.step()
	if a := testing.AllocsPerRun(10, func() { tr.step() }); a != 0 {
		t.Errorf("training step allocates %v times", a)
	}
}

// BenchmarkSpMMSegmentMax measures forward+backward of max-aggregated
// message passing, fused and as the composition SegmentMax(SpMM(...)):
// 4 terms per message (as EdgeConv's: a source row and three edge-feature
// rows), 9 messages per destination.
func BenchmarkSpMMSegmentMax(b *testing.B) {
	for _, fused := range []bool{true, false} {
		for _, s := range []struct{ nodes, d int }{{1200, 64}, {10000, 64}} {
			b.Run(fmt.Sprintf("fused=%v/nodes=%d/dim=%d", fused, s.nodes, s.d), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 1))
				const deg, terms = 9, 4
				x := NewParam[float32](s.nodes+3, s.d)
				copy(x.Data, randf32(rng, len(x.Data)))
				var ptr, idx, seg []int
				var w []float32
				ptr = append(ptr, 0)
				for i := 0; i < s.nodes; i++ {
					for range deg {
						idx = append(idx, rng.IntN(s.nodes), s.nodes, s.nodes+1, s.nodes+2)
						w = append(w, 1, rng.Float32(), rng.Float32(), rng.Float32())
						ptr = append(ptr, len(idx))
						seg = append(seg, i)
					}
				}
				tp := NewTape[float32]()
				run := func() {
					tp.Reset()
					var y *Tensor[float32]
					if fused {
						y = tp.SpMMSegmentMax(ptr, idx, w, x, seg, s.nodes)
					} else {
						y = tp.SegmentMax(tp.SpMM(ptr, idx, w, x), seg, s.nodes)
					}
					tp.Backward(tp.SumAll(y))
				}
				run()
				b.ReportAllocs()
				for b.Loop() {
					run()
				}
			})
		}
	}
}
