package gnn

import (
	"fmt"
	"math/rand/v2"

	"github.com/tegrl/tegrl/nn"
)

// Conv is a convolution over one relation: it returns, for every
// destination node, the terms the relation adds to its new features, one
// or two (the second's X nil when there is one). A term can be a product
// X·W, which [HeteroConv] then computes into the sum itself (see
// [nn.Tape.SumTerms]) instead of storing it first.
type Conv[T nn.Float] interface {
	Terms(tp *nn.Tape[T], xSrc, xDst *nn.Tensor[T], e *Edges[T]) (t1, t2 nn.Term[T])
}

// rootFolder is a Conv with a term W·x_i + b in the destinations' own rows
// (see [EdgeConv.FoldTerms]), which HeteroConv adds to the root term.
type rootFolder[T nn.Float] interface {
	FoldTerms(tp *nn.Tape[T], xSrc, xDst *nn.Tensor[T], e *Edges[T]) (w, b *nn.Tensor[T], t1, t2 nn.Term[T], ok bool)
}

// ConvKind selects the convolution a [HeteroConv] uses for a relation.
type ConvKind int

// Convolution kinds.
const (
	ConvNone     ConvKind = iota // the relation is not used
	ConvSAGE                     // SAGE, mean aggregation
	ConvEdgeMax                  // EdgeConv with edge features, max aggregation
	ConvEdgeMean                 // EdgeConv with edge features, mean aggregation
)

var convKindNames = [...]string{"none", "sage", "edge_max", "edge_mean"}

func (k ConvKind) String() string {
	if k >= 0 && int(k) < len(convKindNames) {
		return convKindNames[k]
	}
	return fmt.Sprintf("conv(%d)", int(k))
}

// MarshalText and UnmarshalText let a ConvKind appear by name in JSON
// configurations (stored with saved encoders).
func (k ConvKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText parses a name written by MarshalText.
func (k *ConvKind) UnmarshalText(b []byte) error {
	for i, n := range convKindNames {
		if n == string(b) {
			*k = ConvKind(i)
			return nil
		}
	}
	return fmt.Errorf("gnn: unknown convolution kind %q", b)
}

// HeteroConv is a heterogeneous graph convolution: one convolution per
// relation into each destination type, their results summed, plus a root
// term per destination type:
//
//	h_t' = W_t·h_i + b_t + Σ_{r: dst(r)=t} conv_r(h_src(r), h_t)
//
// With SAGE convolutions this is exactly the sum of per-relation SAGE
// layers (each with its own root weight and bias): the sum of the root
// terms Σ_r W_root^r·h_i + b^r is one linear map, W_t = Σ_r W_root^r, so
// storing it once is the same model with one product per type instead of
// one per relation. A type that no relation points into keeps its root
// term, so every type gets new features. Relations whose Conv is nil are
// skipped.
type HeteroConv[T nn.Float] struct {
	Root [NumNodeTypes]*nn.Linear[T]
	Conv [NumRelations]Conv[T]
}

// NewHeteroConv registers a heterogeneous convolution from per-type input
// widths in to out-wide rows of every type. edgeDim gives each relation's
// edge feature width; edgeSizes the EdgeConv MLP's layer widths after its
// input (the last must be out); act the activation between MLP layers.
// EdgeConv relations need equal source and destination widths.
func NewHeteroConv[T nn.Float](ps *nn.Params[T], name string, in [NumNodeTypes]int, out int, kinds [NumRelations]ConvKind,
	edgeDim [NumRelations]int, edgeSizes []int, act nn.Activation, rng *rand.Rand) *HeteroConv[T] {
	h := new(HeteroConv[T])
	for t := NodeType(0); t < NumNodeTypes; t++ {
		h.Root[t] = nn.NewLinear(ps, name+".root."+t.String(), in[t], out, rng)
	}
	for r := Relation(0); r < NumRelations; r++ {
		rn := name + "." + r.String()
		s, d := in[r.Src()], in[r.Dst()]
		switch kinds[r] {
		case ConvNone:
		case ConvSAGE:
			h.Conv[r] = NewSAGEMessages(ps, rn, s, out, rng)
		case ConvEdgeMax, ConvEdgeMean:
			if s != d {
				panic(fmt.Sprintf("gnn: NewHeteroConv: EdgeConv on %s needs equal widths, have %d and %d", r, s, d))
			}
			if n := len(edgeSizes); n == 0 || edgeSizes[n-1] != out {
				panic(fmt.Sprintf("gnn: NewHeteroConv: EdgeConv sizes %v must end with %d", edgeSizes, out))
			}
			agg := AggMax
			if kinds[r] == ConvEdgeMean {
				agg = AggMean
			}
			h.Conv[r] = NewEdgeConv(ps, rn, s, edgeDim[r], edgeSizes, act, agg, rng)
		default:
			panic(fmt.Sprintf("gnn: NewHeteroConv: %s: unknown kind %v", r, kinds[r]))
		}
	}
	return h
}

// Forward returns the new features of every node type given the current
// ones, x[t] of shape [b's nodes of type t, in[t]].
func (h *HeteroConv[T]) Forward(tp *nn.Tape[T], x [NumNodeTypes]*nn.Tensor[T], b *Batch[T]) [NumNodeTypes]*nn.Tensor[T] {
	return h.ForwardAct(tp, x, b, nn.ActIdentity)
}

// ForwardAct is Forward followed by the activation act, which the sums
// apply as they store where they can (ReLU; see [nn.Tape.SumTerms]).
func (h *HeteroConv[T]) ForwardAct(tp *nn.Tape[T], x [NumNodeTypes]*nn.Tensor[T], b *Batch[T], act nn.Activation) [NumNodeTypes]*nn.Tensor[T] {
	// Each node type's terms (its root term, then those of the relations
	// into it) go into one SumTerms: the products accumulate into the
	// result, and no term is stored on its own.
	var terms [NumNodeTypes][2*NumRelations + 1]nn.Term[T]
	var nterms [NumNodeTypes]int
	var rootW, rootB [NumNodeTypes]*nn.Tensor[T]
	for t := range terms {
		rootW[t], rootB[t] = h.Root[t].W, h.Root[t].B
		nterms[t] = 1 // the root term, terms[t][0], set below
	}
	for r := Relation(0); r < NumRelations; r++ {
		if h.Conv[r] == nil || b.Rel[r].Adj != nil && b.Rel[r].Adj.Len() == 0 {
			// A relation without edges (a CPU-only cluster's GPU links)
			// would add a term of zeros, at the price of a product and
			// an aggregation.
			continue
		}
		d := r.Dst()
		var t1, t2 nn.Term[T]
		folded := false
		if f, ok := h.Conv[r].(rootFolder[T]); ok {
			// The convolution's term linear in the destinations' own rows
			// joins the root term: one product of those rows, not two.
			var w, bias *nn.Tensor[T]
			if w, bias, t1, t2, folded = f.FoldTerms(tp, x[r.Src()], x[d], &b.Rel[r]); folded {
				rootW[d], rootB[d] = tp.Add(rootW[d], w), tp.Add(rootB[d], bias)
			}
		}
		if !folded {
			t1, t2 = h.Conv[r].Terms(tp, x[r.Src()], x[d], &b.Rel[r])
		}
		terms[d][nterms[d]] = t1
		nterms[d]++
		if t2.X != nil {
			terms[d][nterms[d]] = t2
			nterms[d]++
		}
	}
	var out [NumNodeTypes]*nn.Tensor[T]
	for t := range out {
		terms[t][0] = nn.Term[T]{X: x[t], W: rootW[t]}
		out[t] = tp.SumTerms(act, rootB[t], terms[t][:nterms[t]]...)
	}
	return out
}
