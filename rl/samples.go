package rl

import (
	"fmt"
	"math"
	"slices"

	"github.com/tegrl/tegrl/nn"
)

// Samples stores decisions' policy inputs and actions in flat arrays, so
// that a batch of them can be evaluated in one pass. Sample i's candidate
// rows are Cand[i·K·CandFeatures:], the first Valid[i] of them real and
// the rest zero padding.
type Samples struct {
	K       int
	Cand    []float32 // [S × K × CandFeatures]
	Nodes   []int32   // [S × K]: the machine of each candidate row (-1 padding)
	Valid   []int32   // [S]
	Ctx     []float32 // [S × CtxFeatures]
	Service []float32 // [S]: 1 for a service's decision
	Choice  []int     // [S]: chosen candidate row
	Replica []int     // [S]: replica delta + 5
	Aff     []float32 // [S]: affinity Beta sample in (0, 1)
	Damp    []float32 // [S]: damping Beta sample in (0, 1)

	// WithGraph adds each candidate's graph row (the inputs of the GNN
	// encoder, see GraphFeatures) in Graph: [S × K × GraphFeatures]. A
	// policy with the GNN encoder needs them; others ignore them.
	WithGraph bool
	Graph     []float32

	// Batch scratch.
	xc, xg, affT, dampT, svcT, onesT *nn.Tensor[float32]
	mask                             []bool
	seg, rows, choice, rep           []int
	graph                            candGraph
}

// Configure empties s for the decisions of a policy with configuration cfg:
// its candidate count, and graph rows when its encoder needs them.
func (s *Samples) Configure(cfg PolicyConfig) {
	s.K, s.WithGraph = cfg.Candidates, cfg.Encoder == EncoderGNN
	s.Reset()
}

// Len is the number of samples.
func (s *Samples) Len() int { return len(s.Valid) }

// Reset forgets all samples, keeping the memory.
func (s *Samples) Reset() {
	s.Cand, s.Nodes, s.Valid, s.Ctx = s.Cand[:0], s.Nodes[:0], s.Valid[:0], s.Ctx[:0]
	s.Service, s.Choice, s.Replica, s.Aff, s.Damp = s.Service[:0], s.Choice[:0], s.Replica[:0], s.Aff[:0], s.Damp[:0]
	s.Graph = s.Graph[:0]
}

// grow appends one zeroed sample and returns its candidate rows, node
// slots and context row.
func (s *Samples) grow() (cand []float32, nodes []int32, ctx []float32) {
	nc, nn0, nx := len(s.Cand), len(s.Nodes), len(s.Ctx)
	s.Cand = growZero(s.Cand, s.K*CandFeatures)
	s.Nodes = slices.Grow(s.Nodes, s.K)[:nn0+s.K] // append(…, make(…)…) allocates under -race
	for i := nn0; i < len(s.Nodes); i++ {
		s.Nodes[i] = -1
	}
	s.Ctx = growZero(s.Ctx, CtxFeatures)
	s.Valid = append(s.Valid, 0)
	s.Service = append(s.Service, 0)
	s.Choice = append(s.Choice, 0)
	s.Replica = append(s.Replica, ReplicaChoices/2)
	s.Aff = append(s.Aff, 0.5)
	s.Damp = append(s.Damp, 0.5)
	if s.WithGraph {
		s.Graph = growZero(s.Graph, s.K*GraphFeatures)
	}
	return s.Cand[nc:], s.Nodes[nn0:], s.Ctx[nx:]
}

// graphRows returns sample i's candidate graph rows ([K × GraphFeatures]).
func (s *Samples) graphRows(i int) []float32 {
	n := s.K * GraphFeatures
	return s.Graph[i*n : (i+1)*n]
}

func growZero(b []float32, n int) []float32 {
	l := len(b)
	b = slices.Grow(b, n)[:l+n]
	clear(b[l:])
	return b
}

// drop removes the last sample (one that could not be featurised).
func (s *Samples) drop() {
	n := s.Len() - 1
	s.Cand, s.Nodes = s.Cand[:n*s.K*CandFeatures], s.Nodes[:n*s.K]
	s.Ctx, s.Valid, s.Service = s.Ctx[:n*CtxFeatures], s.Valid[:n], s.Service[:n]
	s.Choice, s.Replica, s.Aff, s.Damp = s.Choice[:n], s.Replica[:n], s.Aff[:n], s.Damp[:n]
	if s.WithGraph {
		s.Graph = s.Graph[:n*s.K*GraphFeatures]
	}
}

// SetAction records sample i's action: the candidate row, the replica
// index (delta + 5) and the two Beta samples.
func (s *Samples) SetAction(i, choice, rep int, aff, damp float32) {
	s.Choice[i], s.Replica[i], s.Aff[i], s.Damp[i] = choice, rep, aff, damp
}

// CopyFrom appends sample i of o (same K). Graph rows are copied when both
// have them; s must not want them when o lacks them.
func (s *Samples) CopyFrom(o *Samples, i int) {
	if s.WithGraph && !o.WithGraph {
		panic("rl: Samples.CopyFrom: copying a sample without graph rows into samples with them")
	}
	cand, nodes, ctx := s.grow()
	K := o.K
	copy(cand, o.Cand[i*K*CandFeatures:(i+1)*K*CandFeatures])
	copy(nodes, o.Nodes[i*K:(i+1)*K])
	copy(ctx, o.Ctx[i*CtxFeatures:(i+1)*CtxFeatures])
	j := s.Len() - 1
	if s.WithGraph {
		copy(s.graphRows(j), o.graphRows(i))
	}
	s.Valid[j], s.Service[j] = o.Valid[i], o.Service[i]
	s.SetAction(j, o.Choice[i], o.Replica[i], o.Aff[i], o.Damp[i])
}

// Validate checks every sample for shapes, ranges and finite values.
func (s *Samples) Validate() error {
	n := s.Len()
	if s.K < 1 || len(s.Cand) != n*s.K*CandFeatures || len(s.Nodes) != n*s.K || len(s.Ctx) != n*CtxFeatures ||
		len(s.Service) != n || len(s.Choice) != n || len(s.Replica) != n || len(s.Aff) != n || len(s.Damp) != n ||
		(s.WithGraph && len(s.Graph) != n*s.K*GraphFeatures) || (!s.WithGraph && len(s.Graph) != 0) {
		return fmt.Errorf("samples: inconsistent lengths for %d samples of K=%d", n, s.K)
	}
	for i := 0; i < n; i++ {
		v := int(s.Valid[i])
		switch {
		case v < 1 || v > s.K:
			return fmt.Errorf("sample %d: %d valid candidates, want 1..%d", i, v, s.K)
		case s.Choice[i] < 0 || s.Choice[i] >= v:
			return fmt.Errorf("sample %d: choice %d outside its %d candidates", i, s.Choice[i], v)
		case s.Replica[i] < 0 || s.Replica[i] >= ReplicaChoices:
			return fmt.Errorf("sample %d: replica index %d outside [0, %d)", i, s.Replica[i], ReplicaChoices)
		case !(s.Aff[i] > 0 && s.Aff[i] < 1) || !(s.Damp[i] > 0 && s.Damp[i] < 1):
			return fmt.Errorf("sample %d: Beta samples affinity %v, damping %v outside (0, 1)", i, s.Aff[i], s.Damp[i])
		case s.Service[i] != 0 && s.Service[i] != 1:
			return fmt.Errorf("sample %d: service flag %v", i, s.Service[i])
		}
	}
	for i, x := range s.Cand {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("sample %d: candidate feature %d is %v", i/(s.K*CandFeatures), i%CandFeatures, x)
		}
	}
	for i, x := range s.Ctx {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("sample %d: context feature %d is %v", i/CtxFeatures, i%CtxFeatures, x)
		}
	}
	for i, x := range s.Graph {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) || (i%GraphFeatures >= graphHistory && x < 0) {
			return fmt.Errorf("sample %d: graph feature %d is %v", i/(s.K*GraphFeatures), i%GraphFeatures, x)
		}
	}
	return nil
}

func tensor2(t *nn.Tensor[float32], r, c int) *nn.Tensor[float32] {
	if t == nil {
		return nn.Zeros[float32](r, c)
	}
	return t.Resize(r, c)
}

func tensor1(t *nn.Tensor[float32], n int) *nn.Tensor[float32] {
	if t == nil {
		return nn.Zeros[float32](n)
	}
	return t.Resize(n)
}

// gather copies samples idx into the batch inputs: candidate rows
// [B·K × CandFeatures], contexts [B × CtxFeatures], the candidate mask
// [B × K], each row's pooling segment (B for padding) and its sample row.
func (s *Samples) gather(idx []int) (xc, xg *nn.Tensor[float32], mask []bool, seg, rows []int) {
	B, K := len(idx), s.K
	s.xc = tensor2(s.xc, B*K, CandFeatures)
	s.xg = tensor2(s.xg, B, CtxFeatures)
	s.mask = resize(s.mask, B*K)
	s.seg = resize(s.seg, B*K)
	s.rows = resize(s.rows, B*K)
	for b, i := range idx {
		copy(s.xc.Data[b*K*CandFeatures:(b+1)*K*CandFeatures], s.Cand[i*K*CandFeatures:(i+1)*K*CandFeatures])
		copy(s.xg.Data[b*CtxFeatures:(b+1)*CtxFeatures], s.Ctx[i*CtxFeatures:(i+1)*CtxFeatures])
		v := int(s.Valid[i])
		for k := 0; k < K; k++ {
			r := b*K + k
			s.mask[r] = k < v
			s.rows[r] = b
			s.seg[r] = b
			if k >= v {
				s.seg[r] = B
			}
		}
	}
	return s.xc, s.xg, s.mask, s.seg, s.rows
}

// actions returns the stored actions of samples idx as batch inputs.
func (s *Samples) actions(idx []int) (choice, rep []int, aff, damp, svc *nn.Tensor[float32]) {
	B := len(idx)
	s.choice, s.rep = resize(s.choice, B), resize(s.rep, B)
	s.affT, s.dampT, s.svcT = tensor1(s.affT, B), tensor1(s.dampT, B), tensor1(s.svcT, B)
	for b, i := range idx {
		s.choice[b], s.rep[b] = s.Choice[i], s.Replica[i]
		s.affT.Data[b], s.dampT.Data[b], s.svcT.Data[b] = s.Aff[i], s.Damp[i], s.Service[i]
	}
	return s.choice, s.rep, s.affT, s.dampT, s.svcT
}

// ones returns a [B × 2] tensor of ones (the Beta heads' +1).
func (s *Samples) ones(B int) *nn.Tensor[float32] {
	s.onesT = tensor2(s.onesT, B, 2)
	for i := range s.onesT.Data {
		s.onesT.Data[i] = 1
	}
	return s.onesT
}

func resize[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}
