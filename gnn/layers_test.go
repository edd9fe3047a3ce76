package gnn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tegrl/tegrl/nn"
)

// relationCase builds float64 edges between ns sources and nd destinations.
func relationCase(rng *rand.Rand, ns, nd, fd int) *Edges[float64] {
	c := randRelation(rng, ns, nd, fd)
	e := new(Edges[float64])
	e.Load(&c, ns)
	return e
}

func TestSAGEGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for rep := 0; rep < 4; rep++ {
		ns, nd := 1+rng.IntN(6), 1+rng.IntN(6)
		in, out := 1+rng.IntN(4), 1+rng.IntN(4)
		if rep == 0 {
			ns, nd = 2, 7 // few sources: project, then aggregate
		}
		if rep == 1 {
			ns, nd = 7, 2 // few destinations: aggregate, then project
		}
		e := relationCase(rng, ns, nd, 0)
		ps := nn.NewParams[float64]()
		l := NewSAGE(ps, "sage", in, in+1, out, rng)
		randomise(rng, l.Bias)
		xs, xd := randTensor(rng, ns, in), randTensor(rng, nd, in+1)
		for order := -1; order < 4; order++ { // the cheapest, then each
			sageOrder = order
			checkGrad(t, fmt.Sprintf("SAGE/%d/src=%d/dst=%d/order=%d", rep, ns, nd, order), rng, append(params(ps), xs, xd),
				func(tp *nn.Tape[float64]) *nn.Tensor[float64] { return l.Forward(tp, xs, xd, e) })
		}
		sageOrder = -1
	}
}

// TestSAGEOrders: the four orders of SAGE's product and mean (all sources,
// all destinations, the sources with an edge, the destinations with an
// edge) give the same messages, on relations where some sources and
// destinations have no edge, and the order Terms picks by cost is the one
// with the fewest rows to project where they differ most.
func TestSAGEOrders(t *testing.T) {
	defer func() { sageOrder = -1 }()
	rng := rand.New(rand.NewPCG(4, 4))
	for rep := 0; rep < 20; rep++ {
		ns, nd := 1+rng.IntN(30), 1+rng.IntN(30)
		e := relationCase(rng, ns, nd, 0)
		ps := nn.NewParams[float64]()
		l := NewSAGEMessages(ps, "sage", 5, 4, rng)
		xs, xd := randTensor(rng, ns, 5), randTensor(rng, nd, 1)
		var ref []float64
		for order := 0; order < 4; order++ {
			sageOrder = order
			got := l.Messages(nn.NewTape[float64](), xs, xd, e).Data
			if order == 0 {
				ref = got
				continue
			}
			for i := range got {
				if math.Abs(got[i]-ref[i]) > 1e-12*max(1, math.Abs(ref[i])) {
					t.Fatalf("rep %d order %d: messages %v, order 0 %v", rep, order, got, ref)
				}
			}
		}
	}
	// 1,000 sources of which 3 have edges into 1,000 destinations: only the
	// used sources are worth projecting.
	var src, dst []int32
	for i := range 10 {
		src, dst = append(src, int32(i%3)), append(dst, int32(i*97))
	}
	var c CSR
	c.SetCOO(1000, src, dst, nil, 0)
	e := new(Edges[float64])
	e.Load(&c, 1000)
	ps := nn.NewParams[float64]()
	l := NewSAGEMessages(ps, "sage", 8, 8, rng)
	sageOrder = -1
	if o := l.order(e); o != 2 {
		t.Errorf("order %d, want 2 (the used sources projected)", o)
	}
	// The reverse: 3 destinations of 1,000 reached from all 1,000 sources.
	src, dst = src[:0], dst[:0]
	for i := range 1000 {
		src, dst = append(src, int32(i)), append(dst, int32(i%3*300))
	}
	c.SetCOO(1000, src, dst, nil, 0)
	e.Load(&c, 1000)
	if o := l.order(e); o != 3 {
		t.Errorf("order %d, want 3 (the used destinations projected)", o)
	}
}

func TestEdgeConvGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	for _, agg := range []Aggregation{AggMax, AggMean} {
		for _, sizes := range [][]int{{3}, {5, 3}} {
			for _, fd := range []int{0, 2} {
				n := 2 + rng.IntN(5)
				in := 1 + rng.IntN(3)
				e := relationCase(rng, n, n+1, fd)
				ps := nn.NewParams[float64]()
				l := NewEdgeConv(ps, "edge", in, fd, sizes, nn.ActTanh, agg, rng)
				for _, p := range params(ps) {
					randomise(rng, p)
				}
				xs, xd := randTensor(rng, n, in), randTensor(rng, n+1, in)
				name := fmt.Sprintf("EdgeConv/agg=%v/mlp=%v/edge=%d", agg, sizes, fd)
				checkGrad(t, name, rng, append(params(ps), xs, xd),
					func(tp *nn.Tape[float64]) *nn.Tensor[float64] { return l.Forward(tp, xs, xd, e) })
			}
		}
	}
}

// TestEdgeConvMatchesMLP checks the decomposed first layer against the
// definition: the MLP applied to the concatenation [x_i, x_j − x_i, e_ij]
// of every edge, then aggregated.
func TestEdgeConvMatchesMLP(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, agg := range []Aggregation{AggMax, AggMean} {
		n, in, fd := 6, 3, 2
		e := relationCase(rng, n, n, fd)
		ps := nn.NewParams[float64]()
		for _, sizes := range [][]int{{3}, {4, 3}} {
			l := NewEdgeConv(ps, fmt.Sprint("edge", sizes), in, fd, sizes, nn.ActReLU, agg, rng)
			for _, p := range params(ps) {
				randomise(rng, p)
			}
			x := randTensor(rng, n, in)
			tp := nn.NewTape[float64]()
			got := l.Forward(tp, x, x, e)
			adj := e.Adj
			for i := 0; i < n; i++ {
				want := make([]float64, 3)
				for e := adj.Ptr[i]; e < adj.Ptr[i+1]; e++ {
					row := make([]float64, 0, 2*in+fd)
					xi, xj := x.Data[i*in:(i+1)*in], x.Data[adj.Src[e]*in:(adj.Src[e]+1)*in]
					row = append(row, xi...)
					for k := range xj {
						row = append(row, xj[k]-xi[k])
					}
					for _, f := range adj.EdgeFeat(e) {
						row = append(row, float64(f))
					}
					m := l.MLP.Forward(tp, nn.NewTensor(row, 1, len(row)))
					for k, v := range m.Data {
						switch {
						case agg == AggMean:
							want[k] += v / float64(adj.Degree(i))
						case e == adj.Ptr[i] || v > want[k]:
							want[k] = v
						}
					}
				}
				for k := range want {
					if g := got.Data[i*3+k]; math.Abs(g-want[k]) > 1e-12 {
						t.Errorf("agg=%v mlp=%v node %d output %d: %v, definition gives %v", agg, sizes, i, k, g, want[k])
					}
				}
			}
		}
	}
}

func TestHeteroConvGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	d := Dims{Feat: [NumNodeTypes]int{3, 3, 3}, Edge: [NumRelations]int{2, 1, 1, 2, 1, 1, 2, 1}}
	for _, kinds := range [][NumRelations]ConvKind{
		{ConvEdgeMax, ConvSAGE, ConvEdgeMean, ConvSAGE, ConvEdgeMax, ConvSAGE, ConvEdgeMean, ConvNone},
		{ConvSAGE, ConvSAGE, ConvSAGE, ConvSAGE, ConvSAGE, ConvSAGE, ConvSAGE, ConvSAGE},
	} {
		g := randGraph(rng, [NumNodeTypes]int{5, 4, 3}, d)
		b := NewBatch[float64](g)
		ps := nn.NewParams[float64]()
		h := NewHeteroConv(ps, "h", d.Feat, 3, kinds, d.Edge, []int{3}, nn.ActTanh, rng)
		for _, p := range params(ps) {
			randomise(rng, p)
		}
		in := append(params(ps), b.X[:]...)
		checkGrad(t, fmt.Sprintf("HeteroConv/%v", kinds), rng, in, func(tp *nn.Tape[float64]) *nn.Tensor[float64] {
			out := h.Forward(tp, b.X, b)
			return tp.Concat(tp.Concat(out[Machine], out[GPU], 0), out[Job], 0)
		})
	}
}

// TestHeteroConvMatchesRelations checks HeteroConv against its
// definition: the root term plus every relation's convolution on its own
// (Terms, unfolded), where EdgeConv's part in the destinations' own rows
// joins the root term, on graphs whose relations leave some destinations
// without in-edges.
func TestHeteroConvMatchesRelations(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 14))
	d := Dims{Feat: [NumNodeTypes]int{3, 3, 3}, Edge: [NumRelations]int{2, 1, 0, 2, 1, 1, 0, 1}}
	kinds := [NumRelations]ConvKind{ConvEdgeMax, ConvSAGE, ConvEdgeMean, ConvEdgeMax, ConvEdgeMean, ConvSAGE, ConvEdgeMax, ConvNone}
	nLone := 0
	for trial := range 4 {
		g := randGraph(rng, [NumNodeTypes]int{5 + trial, 4, 3}, d)
		b := NewBatch[float64](g)
		for r := range kinds {
			if kinds[r] == ConvEdgeMax || kinds[r] == ConvEdgeMean {
				nLone += len(b.Rel[r].lone().dst)
			}
		}
		ps := nn.NewParams[float64]()
		h := NewHeteroConv(ps, "h", d.Feat, 3, kinds, d.Edge, []int{3}, nn.ActTanh, rng)
		for _, p := range params(ps) {
			randomise(rng, p)
		}
		tp := nn.NewTape[float64]()
		got := h.Forward(tp, b.X, b)
		for ty := NodeType(0); ty < NumNodeTypes; ty++ {
			want := tp.Affine(b.X[ty], h.Root[ty].W, h.Root[ty].B)
			for r := Relation(0); r < NumRelations; r++ {
				if h.Conv[r] == nil || r.Dst() != ty {
					continue
				}
				t1, t2 := h.Conv[r].Terms(tp, b.X[r.Src()], b.X[ty], &b.Rel[r])
				want = tp.Add(want, tp.Value(t1))
				if t2.X != nil {
					want = tp.Add(want, tp.Value(t2))
				}
			}
			for i, w := range want.Data {
				if g := got[ty].Data[i]; math.Abs(g-w) > 1e-12*max(1, math.Abs(w)) {
					t.Errorf("trial %d %s row %d col %d: %v, relations one by one give %v", trial, ty, i/3, i%3, g, w)
				}
			}
		}
	}
	if nLone == 0 {
		t.Fatal("no destination without in-edges in an EdgeConv relation")
	}
}

func TestTemporalGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, steps := range []int{1, 2, 12} {
		ps := nn.NewParams[float64]()
		l := NewTemporal(ps, "t", 3, 4, DefaultTau, nn.ActTanh, rng)
		randomise(rng, l.Bias)
		h := randTensor(rng, 5, steps, 3)
		checkGrad(t, fmt.Sprintf("Temporal/steps=%d", steps), rng, append(params(ps), h),
			func(tp *nn.Tape[float64]) *nn.Tensor[float64] { return l.Forward(tp, h) })
	}
}

func TestPoolGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	var p Pool[float64]
	for _, n := range []int{1, 4} {
		x := randTensor(rng, n, 3)
		checkGrad(t, fmt.Sprintf("Pool/n=%d", n), rng, []*nn.Tensor[float64]{x},
			func(tp *nn.Tape[float64]) *nn.Tensor[float64] { return p.Forward(tp, x) })
	}
	tp := nn.NewTape[float64]()
	if out := p.Forward(tp, nn.Zeros[float64](0, 3)); len(out.Data) != 6 || out.Data[0] != 0 || out.Data[5] != 0 {
		t.Errorf("empty pool: %v, want six zeros", out.Data)
	}
}

// TestEncoderGradients checks the whole encoder, every parameter and every
// input feature, on a small random graph.
func TestEncoderGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	d := Dims{Feat: [NumNodeTypes]int{3, 2, 2}, Edge: [NumRelations]int{2, 1, 1, 2, 1, 1, 2, 1}, HistoryLen: 4, HistoryChannels: 2, Global: 2}
	cfg := DefaultEncoderConfig(d)
	cfg.Hidden, cfg.Layers, cfg.TemporalChannels, cfg.EdgeHidden, cfg.Act = 4, 2, 3, 3, nn.ActTanh
	cfg.Conv[ServesJob] = ConvEdgeMean
	enc, err := NewEncoder[float64](cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range params(enc.Params) {
		randomise(rng, p)
	}
	g := randGraph(rng, [NumNodeTypes]int{4, 3, 3}, d)
	b := NewBatch[float64](g)
	in := append(params(enc.Params), b.X[:]...)
	in = append(in, b.History, b.Global)
	checkGrad(t, "Encoder", rng, in, func(tp *nn.Tape[float64]) *nn.Tensor[float64] {
		emb := enc.Forward(tp, b)
		out := emb.Graph
		for _, x := range emb.Node {
			out = tp.Concat(out, tp.Reshape(x, 1, len(x.Data)), 1)
		}
		return out
	})
}

// randomise fills t with standard normals (biases start at zero, which
// would leave their effect on the output untested by value checks).
func randomise(rng *rand.Rand, t *nn.Tensor[float64]) {
	for i := range t.Data {
		t.Data[i] = rng.NormFloat64()
	}
}
