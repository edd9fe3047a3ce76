package gnn

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/nn"
)

func smallGraph(t testing.TB, seed uint64) *Graph {
	t.Helper()
	cfg := DefaultSyntheticConfig(40, seed)
	cfg.JobsPerMachine = 2
	g, err := Synthetic(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestEncoderSaveLoad(t *testing.T) {
	g := smallGraph(t, 1)
	cfg := DefaultEncoderConfig(g.Dims())
	cfg.EdgeHidden = 8
	enc, err := NewEncoder[float32](cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := enc.Save(&buf, map[string]string{"run": "test"}); err != nil {
		t.Fatal(err)
	}
	back, meta, err := LoadEncoder[float32](bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if meta["run"] != "test" || back.Config != enc.Config {
		t.Fatalf("metadata %v, config %+v; want run=test and %+v", meta, back.Config, enc.Config)
	}
	b := NewBatch[float32](g)
	e1 := enc.Forward(nn.NewTape[float32](), b)
	e2 := back.Forward(nn.NewTape[float32](), b)
	for ty := range e1.Node {
		if !equalData(e1.Node[ty].Data, e2.Node[ty].Data) {
			t.Errorf("%s embeddings differ after a save/load round trip", NodeType(ty))
		}
	}
	if !equalData(e1.Graph.Data, e2.Graph.Data) {
		t.Error("graph embedding differs after a save/load round trip")
	}
	// A file written for other widths is refused by the encoder built from it.
	if err := back.Check(NewBatch[float32](mustSynthetic(t, 5, SyntheticDims))); err != nil {
		t.Errorf("same widths refused: %v", err)
	}
	d := SyntheticDims
	d.Feat[Job]++
	d.Edge[RunsOnMachine]++
	if err := back.Check(NewBatch[float32](mustSynthetic(t, 5, d))); err == nil || !strings.Contains(err.Error(), "encoder built for") {
		t.Errorf("other widths: %v, want a refusal", err)
	}
	if _, _, err := LoadEncoder[float32](bytes.NewReader(buf.Bytes()[:buf.Len()-4])); err == nil {
		t.Error("truncated file accepted")
	}
}

func mustSynthetic(t testing.TB, n int, d Dims) *Graph {
	cfg := DefaultSyntheticConfig(n, 9)
	cfg.Dims = d
	g, err := Synthetic(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func equalData[T nn.Float](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestEncoderFloat32MatchesFloat64 runs the same weights in both types.
func TestEncoderFloat32MatchesFloat64(t *testing.T) {
	g := smallGraph(t, 2)
	cfg := DefaultEncoderConfig(g.Dims())
	e32, err := NewEncoder[float32](cfg, 5)
	if err != nil {
		t.Fatal(err)
	}
	e64, _ := NewEncoder[float64](cfg, 5)
	o32 := e32.Forward(nn.NewTape[float32](), NewBatch[float32](g))
	o64 := e64.Forward(nn.NewTape[float64](), NewBatch[float64](g))
	worst := 0.0
	for ty := range o32.Node {
		for i, v := range o64.Node[ty].Data {
			worst = max(worst, math.Abs(float64(o32.Node[ty].Data[i])-v)/max(1, math.Abs(v)))
		}
	}
	if worst > 1e-4 {
		t.Errorf("float32 and float64 embeddings differ by %.3g (relative)", worst)
	}
}

// TestEncoderEmptyTypes runs the encoder on graphs without GPUs or jobs:
// forward in float64, and forward and backward in float32, where the AVX2
// message-passing kernels see relations from node types with no rows.
func TestEncoderEmptyTypes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	d := SyntheticDims
	enc, err := NewEncoder[float64](DefaultEncoderConfig(d), 1)
	if err != nil {
		t.Fatal(err)
	}
	enc32, err := NewEncoder[float32](DefaultEncoderConfig(d), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, nodes := range [][NumNodeTypes]int{{3, 0, 0}, {1, 0, 2}, {0, 0, 0}, {4, 0, 3}} {
		g := randGraph(rng, nodes, d)
		emb := enc.Forward(nn.NewTape[float64](), NewBatch[float64](g))
		for _, v := range emb.Graph.Data {
			if math.IsNaN(v) {
				t.Fatalf("nodes %v: NaN graph embedding", nodes)
			}
		}
		tp := nn.NewTape[float32]()
		emb32 := enc32.Forward(tp, NewBatch[float32](g))
		enc32.Params.ZeroGrad()
		tp.Backward(tp.SumAll(emb32.Graph))
		for i := 0; i < enc32.Params.Len(); i++ {
			for _, v := range enc32.Params.At(i).Grad {
				if v != v {
					t.Fatalf("nodes %v: NaN gradient", nodes)
				}
			}
		}
	}
}

// TestEncoderAllocs checks that a warm forward and backward pass on a
// graph of unchanged size allocates (almost) nothing. The model is small
// enough that gonum's matrix products stay serial: larger ones start a
// goroutine per 64×64 block of the result, which allocates. The one
// allowed allocation is nn's Reshape (in the temporal encoder), whose
// shape argument escapes.
func TestEncoderAllocs(t *testing.T) {
	cfg := DefaultSyntheticConfig(5, 3)
	cfg.JobsPerMachine = 2
	cfg.Dims.Global = 0
	g, err := Synthetic(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ecfg := DefaultEncoderConfig(g.Dims())
	ecfg.Hidden = 8
	be := newBenchEncoder(t, g)
	if be.enc, err = NewEncoder[float32](ecfg, 1); err != nil {
		t.Fatal(err)
	}
	be.step()
	if a := testing.AllocsPerRun(20, be.step); a > 1 {
		t.Errorf("%v allocations per forward+backward, want at most 1", a)
	}
}

// TestEncoderBackwardLeaves checks that the training step's
// BackwardLeaves gives the encoder's parameters the bits of Backward's
// gradients, over several passes of one tape (from the second on, the
// intermediates' gradients live in recycled buffers).
func TestEncoderBackwardLeaves(t *testing.T) {
	g, err := Synthetic(DefaultSyntheticConfig(40, 5))
	if err != nil {
		t.Fatal(err)
	}
	enc, err := NewEncoder[float32](DefaultEncoderConfig(g.Dims()), 3)
	if err != nil {
		t.Fatal(err)
	}
	b := NewBatch[float32](g)
	pass := func(tp *nn.Tape[float32], leaves bool) [][]float32 {
		tp.Reset()
		enc.Params.ZeroGrad()
		emb := enc.Forward(tp, b)
		loss := tp.SumAll(tp.Mul(emb.Graph, emb.Graph))
		for _, x := range emb.Node {
			loss = tp.Add(loss, tp.SumAll(tp.Tanh(x)))
		}
		if leaves {
			tp.BackwardLeaves(loss)
		} else {
			tp.Backward(loss)
		}
		grads := make([][]float32, enc.Params.Len())
		for i := range grads {
			grads[i] = append([]float32(nil), enc.Params.At(i).Grad...)
		}
		return grads
	}
	want := pass(nn.NewTape[float32](), false)
	tp := nn.NewTape[float32]()
	for k := range 3 {
		got := pass(tp, true)
		for i := range want {
			for j, v := range got[i] {
				if math.Float32bits(v) != math.Float32bits(want[i][j]) {
					t.Fatalf("pass %d: parameter %d element %d: %v, Backward gave %v", k, i, j, v, want[i][j])
				}
			}
		}
	}
}

// TestEncoderTrains fits the graph embedding of a small graph to a fixed
// target with Adam: every parameter, shared views included, must receive
// its gradient and its update for the loss to fall this far.
func TestEncoderTrains(t *testing.T) {
	g := smallGraph(t, 4)
	enc, err := NewEncoder[float32](DefaultEncoderConfig(g.Dims()), 2)
	if err != nil {
		t.Fatal(err)
	}
	b := NewBatch[float32](g)
	target := nn.Zeros[float32](1, enc.Config.Hidden)
	for i := range target.Data {
		target.Data[i] = float32(i%3) - 1
	}
	edgeBias := enc.Layers[0].Conv[Network].(*EdgeConv[float32]).MLP.Layers[0].B
	before := append([]float32(nil), edgeBias.Data...)
	opt := nn.NewAdam(enc.Params, 3e-3)
	tp := nn.NewTape[float32]()
	var first, last float64
	for step := 0; step < 60; step++ {
		tp.Reset()
		enc.Params.ZeroGrad()
		loss := tp.MSE(enc.Forward(tp, b).Graph, target)
		tp.Backward(loss)
		opt.Step()
		if step == 0 {
			first = loss.Item()
		}
		last = loss.Item()
	}
	if !(last < 0.1*first) {
		t.Errorf("loss %.4g → %.4g after 60 Adam steps, want a tenfold drop", first, last)
	}
	if equalData(before, edgeBias.Data) {
		t.Error("EdgeConv bias (used through a [1, out] view) was not trained")
	}
}

// TestEncoderInputLayer checks the machines' input layer, computed as two
// terms, against its definition: the activation of the linear layer on
// the concatenation [features, temporal encoding] (an encoder without
// convolution layers outputs it).
func TestEncoderInputLayer(t *testing.T) {
	g := smallGraph(t, 5)
	cfg := DefaultEncoderConfig(g.Dims())
	cfg.Layers = 0
	enc, err := NewEncoder[float64](cfg, 5)
	if err != nil {
		t.Fatal(err)
	}
	b := NewBatch[float64](g)
	tp := nn.NewTape[float64]()
	got := enc.Forward(tp, b).Node[Machine]
	in := enc.Input[Machine]
	want := tp.Activate(tp.Affine(tp.Concat(b.X[Machine], enc.Temporal.Forward(tp, b.History), 1), in.W, in.B), cfg.Act)
	for i, w := range want.Data {
		if d := math.Abs(got.Data[i] - w); d > 1e-12*max(1, math.Abs(w)) {
			t.Fatalf("machine row %d column %d: %v, definition %v", i/cfg.Hidden, i%cfg.Hidden, got.Data[i], w)
		}
	}
}
