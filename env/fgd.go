package env

import (
	"math"
	"math/rand/v2"
)

// FGD is Fragmentation Gradient Descent (Weng et al., ATC'23): place the job
// where it increases the cluster's GPU fragmentation F(M) the least.
//
// Scoring a machine needs F_n(M) before and after a tentative placement on
// each candidate GPU, O(|M|·G²) per machine. The placement of one job
// changes one machine, so FGD caches each machine's score per request shape
// and recomputes only machines whose version moved: after warm-up a decision
// costs one pass of integer compares over the machines plus a handful of
// fragmentation evaluations.
type FGD struct {
	state  *State
	target *TargetWorkload
	shapes map[fgdShape]int
	cache  [][]fgdEntry // [shape][machine]
	base   []float64    // F_n(M) of each machine at baseVer
	ver    []uint32     // version base[] was computed at (+1; 0 = never)
	tmp    []int32
}

// fgdCacheEntries bounds the score cache (8 bytes an entry): 64 MiB.
const fgdCacheEntries = 8 << 20

// fgdShape is what a machine's FGD score depends on besides the machine.
type fgdShape struct {
	cpu    int64
	milli  int32
	gpus   int
	models uint64
}

type fgdEntry struct {
	ver   uint32 // machine version + 1 the entry was computed at; 0 = empty
	score int32
	gpu   int8
}

// Name implements Scheduler.
func (*FGD) Name() string { return "fgd" }

// ownTarget reports whether the cached fallback target was built for r.
func (p *FGD) ownTarget(r *Request) bool {
	if p.target == nil || len(p.target.Classes) != 1 {
		return false
	}
	c := p.target.Classes[0]
	return c.CPU == r.CPU && c.Milli == r.Milli && c.GPUs == r.GPUs && c.Models == r.Models
}

func (p *FGD) reset(s *State, tw *TargetWorkload) {
	p.state, p.target = s, tw
	p.shapes = map[fgdShape]int{}
	p.cache = nil
	n := len(s.M)
	p.base = make([]float64, n)
	p.ver = make([]uint32, n)
}

// Decide implements Scheduler.
func (p *FGD) Decide(obs *Observation, _ *rand.Rand) Action {
	s, r := obs.State, &obs.Req
	entries := p.scores(obs)
	best, bestScore, bestPrio, bestGPU := -1, int32(math.MinInt32), int32(math.MaxInt32), -1
	for i := range s.M {
		if !s.Admit(i, r) {
			continue
		}
		e := p.entry(entries, s, i, r)
		if e.score > bestScore || (e.score == bestScore && s.M[i].Prio < bestPrio) {
			best, bestScore, bestPrio, bestGPU = i, e.score, s.M[i].Prio, int(e.gpu)
		}
	}
	if best < 0 {
		return Wait
	}
	return Place(best, bestGPU)
}

// Ranked is a machine with its FGD score for a request: int(100·σ(Δ/1000))
// of the fragmentation decrease Δ (docs/fgd.md), and for a share
// request the GPU that score is for (-1 otherwise).
type Ranked struct {
	Machine, Score, GPU int
}

// Rank appends to dst the k admitted machines FGD scores best for obs's
// request, best first (ties by the run's machine priority, as FGD breaks
// them): FGD's choice is the first. It costs what a decision costs, one
// pass over the machines with cached scores.
func (p *FGD) Rank(obs *Observation, k int, dst []Ranked) []Ranked {
	s, r := obs.State, &obs.Req
	entries := p.scores(obs)
	start := len(dst)
	worse := func(a, b Ranked) bool { // a ranks after b
		return a.Score < b.Score || (a.Score == b.Score && s.M[a.Machine].Prio > s.M[b.Machine].Prio)
	}
	for i := range s.M {
		if !s.Admit(i, r) {
			continue
		}
		e := p.entry(entries, s, i, r)
		c := Ranked{Machine: i, Score: int(e.score), GPU: int(e.gpu)}
		top := dst[start:]
		if len(top) == k && (k == 0 || !worse(top[k-1], c)) {
			continue
		}
		if len(top) < k {
			dst = append(dst, c)
			top = dst[start:]
		}
		// Insertion into the sorted top k.
		j := len(top) - 1
		for ; j > 0 && worse(top[j-1], c); j-- {
			top[j] = top[j-1]
		}
		top[j] = c
	}
	return dst
}

// FragDrop is the fragmentation decrease Δ = F_n(M) - F_n'(M) (milli-GPU)
// of placing obs's request on machine i, on GPU gpu for a share request
// (the allocator's GPUs otherwise): the quantity FGD's score quantises.
// Call it after Rank or Decide on the same observation.
func (p *FGD) FragDrop(obs *Observation, i, gpu int) float64 {
	s, r := obs.State, &obs.Req
	before := p.baseFrag(s, i)
	p.tmp = append(p.tmp[:0], s.GPUs(i)...)
	takeRequestGPUs(p.tmp, s, i, r, gpu)
	return before - p.target.NodeFrag(s.M[i].FreeCPU-r.CPU, s.Model(i), p.tmp)
}

// scores returns the score cache of obs's request shape, resetting the
// cache when the state or the target workload changed.
func (p *FGD) scores(obs *Observation) []fgdEntry {
	s, r := obs.State, &obs.Req
	tw := s.Target
	if tw == nil {
		// No typical workload given: measure fragmentation against the job
		// itself, the only task known.
		tw = &TargetWorkload{Classes: []TaskClass{{CPU: r.CPU, Milli: r.Milli, GPUs: r.GPUs, Models: r.Models, Count: 1, Weight: 1}}}
	}
	if p.state != s || (s.Target != nil && p.target != s.Target) || (s.Target == nil && !p.ownTarget(r)) {
		p.reset(s, tw)
	}
	key := fgdShape{r.CPU, r.Milli, r.GPUs, r.Models}
	si, ok := p.shapes[key]
	if !ok && (len(p.cache)+1)*len(s.M) > fgdCacheEntries {
		p.reset(s, tw) // bound memory on huge clusters with many shapes
	}
	if !ok {
		si = len(p.cache)
		p.shapes[key] = si
		p.cache = append(p.cache, make([]fgdEntry, len(s.M)))
	}
	return p.cache[si]
}

// entry returns machine i's cached score entry, recomputed if its version
// moved.
func (p *FGD) entry(entries []fgdEntry, s *State, i int, r *Request) *fgdEntry {
	e := &entries[i]
	if e.ver != s.M[i].Ver+1 {
		sc, g := p.score(s, i, r)
		*e = fgdEntry{ver: s.M[i].Ver + 1, score: int32(sc), gpu: int8(g)}
	}
	return e
}

// baseFrag returns F_n(M) of machine i now, cached by version.
func (p *FGD) baseFrag(s *State, i int) float64 {
	if p.ver[i] != s.M[i].Ver+1 {
		p.base[i] = p.target.NodeFrag(s.M[i].FreeCPU, s.Model(i), s.GPUs(i))
		p.ver[i] = s.M[i].Ver + 1
	}
	return p.base[i]
}

// score returns the FGD score of placing r on machine i and, for share
// requests, the GPU that achieves it.
func (p *FGD) score(s *State, i int, r *Request) (int, int) {
	before := p.baseFrag(s, i)
	gs := s.GPUs(i)
	p.tmp = append(p.tmp[:0], gs...)
	cpu := s.M[i].FreeCPU - r.CPU
	model := s.Model(i)
	quant := func(after float64) int {
		return int(100 * sigmoid((before-after)/1000))
	}
	switch {
	case r.GPUs == 0:
		return quant(p.target.NodeFrag(cpu, model, p.tmp)), -1
	case r.Milli < MilliGPU:
		best, bestGPU := math.MinInt, -1
		for j, g := range gs {
			if g < r.Milli {
				continue
			}
			p.tmp[j] = g - r.Milli
			sc := quant(p.target.NodeFrag(cpu, model, p.tmp))
			p.tmp[j] = g
			if sc > best {
				best, bestGPU = sc, j
			}
		}
		return best, bestGPU
	default:
		takeFullGPUs(p.tmp, r.GPUs)
		return quant(p.target.NodeFrag(cpu, model, p.tmp)), -1
	}
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// takeRequestGPUs takes r's GPUs from gs, a copy of machine i's free milli
// per GPU: for a share request GPU gpu when it fits, else the best-fit
// one (as the allocator picks); for a whole-GPU request the lowest-indexed
// free ones.
func takeRequestGPUs(gs []int32, s *State, i int, r *Request, gpu int) {
	switch {
	case r.GPUs == 0:
	case r.Milli < MilliGPU:
		if gpu < 0 || gpu >= len(gs) || gs[gpu] < r.Milli {
			gpu = s.BestFitGPU(i, r.Milli)
		}
		if gpu >= 0 {
			gs[gpu] -= r.Milli
		}
	default:
		takeFullGPUs(gs, r.GPUs)
	}
}

// takeFullGPUs takes the k lowest-indexed fully free GPUs of gs (free
// milli per GPU), as the allocator does for a whole-GPU request.
func takeFullGPUs(gs []int32, k int) {
	for j := range gs {
		if k > 0 && gs[j] == MilliGPU {
			gs[j] = 0
			k--
		}
	}
}
