package env

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// ColumnSupport restricts max_min_fairness_packed's LP to the columns a
// teacher used: a distilled student of a tiered policy keeps the
// teacher's tiers and solves the same LP over far fewer columns. Of the
// ~1,250 columns a solve of the tiered policy builds on Gavel's
// single-GPU protocol, about 11 have a positive value at the optimum,
// and over whole runs a few dozen (job type, GPU type) and (job type,
// job type, GPU type) combinations carry nearly all the time.
//
// A class's alone column on its fastest usable GPU type of the round is
// always kept, so every job can run whatever the support. GPU types are
// named, so a support applies to any cluster with those types; types it
// does not name keep only that fastest alone column.
type ColumnSupport struct {
	// MaxLogLoad is the cluster load (LogLoad: the log of the GPUs the
	// active jobs ask for over the cluster's GPUs) past which the policy
	// leaves this support for Above: near capacity a teacher needs pairs
	// that its light-load support leaves out. +Inf (NewColumnSupport's)
	// keeps the support at every load.
	MaxLogLoad float64
	// Above is the support past MaxLogLoad, with a larger MaxLogLoad of
	// its own; nil: the full LP. The columns a teacher uses at high load
	// differ from those at low load, so a band of its own keeps the LP
	// small there too.
	Above *ColumnSupport
	// Price: the columns outside the support enter the LP when the
	// restricted LP's duals price them in (column generation, warm from
	// the restricted optimum), so the allocation is an optimum of the
	// full LP, the teacher's but where the LP has several; the support
	// then sets only how much of the LP is solved at once, which is the
	// student's speed. Every column is still built to be priced.
	Price bool

	alone map[supportKey]bool
	pairs map[supportKey]bool
	// The same columns as dense tables, for the per-column tests of a
	// solve: gpu numbers the GPU type names, aloneAt[model*ng+g] and
	// pairAt[(a*nm+b)*ng+g] (a <= b) for nm job types and ng names.
	gpu     map[string]int
	nm, ng  int
	aloneAt []bool
	pairAt  []bool
}

// supportKey is a job type alone (b < 0) or two job types (a <= b) on a
// GPU type.
type supportKey struct {
	a, b int
	gpu  string
}

// SupportColumn names one column of a support: a job type alone on a GPU
// type (B empty), or two job types sharing it.
type SupportColumn struct {
	A, B string // job types of the throughput table
	GPU  string // GPU type name
}

// NewColumnSupport builds a support from named columns of table t;
// unknown job types are errors naming the column.
func NewColumnSupport(t *ThroughputTable, cols []SupportColumn) (*ColumnSupport, error) {
	s := &ColumnSupport{MaxLogLoad: math.Inf(1), alone: map[supportKey]bool{}, pairs: map[supportKey]bool{}}
	for i, c := range cols {
		a := t.Model(c.A)
		if a < 0 {
			return nil, fmt.Errorf("support column %d: unknown job type %q", i, c.A)
		}
		if c.GPU == "" {
			return nil, fmt.Errorf("support column %d: no GPU type", i)
		}
		if c.B == "" {
			s.alone[supportKey{a, -1, c.GPU}] = true
			continue
		}
		b := t.Model(c.B)
		if b < 0 {
			return nil, fmt.Errorf("support column %d: unknown job type %q", i, c.B)
		}
		s.pairs[supportKey{min(a, b), max(a, b), c.GPU}] = true
	}
	s.gpu, s.nm = map[string]int{}, len(t.Models)
	for _, m := range []map[supportKey]bool{s.alone, s.pairs} {
		for k := range m {
			if _, ok := s.gpu[k.gpu]; !ok {
				s.gpu[k.gpu] = len(s.gpu)
			}
		}
	}
	s.ng = len(s.gpu)
	s.aloneAt = make([]bool, s.nm*s.ng)
	s.pairAt = make([]bool, s.nm*s.nm*s.ng)
	for k := range s.alone {
		s.aloneAt[k.a*s.ng+s.gpu[k.gpu]] = true
	}
	for k := range s.pairs {
		s.pairAt[(k.a*s.nm+k.b)*s.ng+s.gpu[k.gpu]] = true
	}
	return s, nil
}

// gpuIDs fills ids with the support's number for each of a round's GPU
// types, -1 for a type it does not name.
func (s *ColumnSupport) gpuIDs(types []string, ids []int) []int {
	ids = ids[:0]
	for _, t := range types {
		g, ok := s.gpu[t]
		if !ok {
			g = -1
		}
		ids = append(ids, g)
	}
	return ids
}

// Columns lists the support's columns by name, alone columns first, each
// group sorted.
func (s *ColumnSupport) Columns(t *ThroughputTable) []SupportColumn {
	var out []SupportColumn
	for k := range s.alone {
		out = append(out, SupportColumn{A: t.Models[k.a], GPU: k.gpu})
	}
	for k := range s.pairs {
		out = append(out, SupportColumn{A: t.Models[k.a], B: t.Models[k.b], GPU: k.gpu})
	}
	slices.SortFunc(out, func(x, y SupportColumn) int {
		if (x.B == "") != (y.B == "") {
			if x.B == "" {
				return -1
			}
			return 1
		}
		return strings.Compare(x.A+"\x00"+x.B+"\x00"+x.GPU, y.A+"\x00"+y.B+"\x00"+y.GPU)
	})
	return out
}

// Len is the number of columns in the support, its bands above
// included.
func (s *ColumnSupport) Len() int {
	n := 0
	for ; s != nil; s = s.Above {
		n += len(s.alone) + len(s.pairs)
	}
	return n
}

// MaxSupportBands bounds the bands of a support (itself and those
// Above it): a file decoder's limit, far above what a distillation
// writes.
const MaxSupportBands = 8

// At is the band of s for a round at load logLoad: the first whose
// MaxLogLoad is not exceeded, nil (the full LP) past them all.
func (s *ColumnSupport) At(logLoad float64) *ColumnSupport {
	for s != nil && logLoad > s.MaxLogLoad {
		s = s.Above
	}
	return s
}

// check checks the band chain: at most MaxSupportBands bands, each
// MaxLogLoad a number within ±maxTieredLogRatio or +Inf, rising band
// by band, and only the last one +Inf.
func (s *ColumnSupport) check() error {
	for k := 0; s != nil; k, s = k+1, s.Above {
		m := s.MaxLogLoad
		switch {
		case k >= MaxSupportBands:
			return fmt.Errorf("support: more than %d bands", MaxSupportBands)
		case !(math.Abs(m) <= maxTieredLogRatio || math.IsInf(m, 1)):
			return fmt.Errorf("support band %d: max_log_load %v: want a number within ±%v", k, m, maxTieredLogRatio)
		case s.Above != nil && !(s.Above.MaxLogLoad > m):
			return fmt.Errorf("support band %d: max_log_load %v: want it below the next band's (%v)", k, m, s.Above.MaxLogLoad)
		}
	}
	return nil
}

// hasAlone tells whether the support keeps job type model alone on the
// GPU type numbered g (gpuIDs).
func (s *ColumnSupport) hasAlone(model, g int) bool {
	return g >= 0 && model < s.nm && s.aloneAt[model*s.ng+g]
}

// hasPair tells whether the support keeps job types a and b together on
// the GPU type numbered g.
func (s *ColumnSupport) hasPair(a, b, g int) bool {
	return g >= 0 && a < s.nm && b < s.nm && s.pairAt[(min(a, b)*s.nm+max(a, b))*s.ng+g]
}

// UsedColumn is a column with a positive value in the last solve of
// max_min_fairness_packed's LP: job type A alone (B < 0) or A and B
// together, on GPU type GPU (an index into the round's types).
type UsedColumn struct {
	A, B, GPU int
}
