package gnn

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// SyntheticDims are the input widths of the environment's observation
// layout (docs/observation.md) when this package was written: machine,
// GPU and job rows of 19, 17 and 29 features, a 12-step × 6-channel load
// history, 31 global features, and 3, 1, 2, 3 and 1 edge features on the
// network, PCIe, NVLink and runs-on relations (reverses carry their
// forward relation's). Synthetic graphs use them so that benchmarks
// measure the real shapes without depending on env; graphs built from
// observations take their widths from env.
var SyntheticDims = Dims{
	Feat:            [NumNodeTypes]int{Machine: 19, GPU: 17, Job: 29},
	Edge:            [NumRelations]int{Network: 3, PCIe: 1, NVLink: 2, RunsOnMachine: 3, RunsOnGPU: 1, HostsGPU: 1, HostsJob: 3, ServesJob: 1},
	HistoryLen:      12,
	HistoryChannels: 6,
	Global:          31,
}

// SyntheticConfig parameterises [Synthetic].
type SyntheticConfig struct {
	Machines int
	// RackSize machines form a rack, linked all-to-all; each machine also
	// links to the machine at its position in the previous and next rack
	// (a rail). RackSize 8 gives network degree 7 + 2 = 9.
	RackSize int
	// JobsPerMachine is the number of job nodes per machine; the first
	// job is the pending one (no edges), the others run on a uniformly
	// drawn machine and, on GPU machines, half of them on 1-4 of its GPUs.
	JobsPerMachine float64
	// CPUOnly draws every rack without GPUs: with JobsPerMachine 0 the
	// graph is machines and their network links only, a homogeneous graph.
	CPUOnly bool
	Dims    Dims // input widths; Edge must match each relation's features
	Seed    uint64
}

// DefaultSyntheticConfig returns the benchmark graph's parameters for a
// cluster of n machines: racks of 8 (network degree 9), one job per
// machine, SyntheticDims.
func DefaultSyntheticConfig(n int, seed uint64) SyntheticConfig {
	return SyntheticConfig{Machines: n, RackSize: 8, JobsPerMachine: 1, Dims: SyntheticDims, Seed: seed}
}

// synthSKUs are rack types: share of racks and GPUs per machine. About a
// quarter of machines carry GPUs, mostly 8-GPU training boxes (1.5 GPUs
// per machine on average), like env's synthetic cluster.
var synthSKUs = []struct {
	share float64
	gpus  int
}{{0.75, 0}, {0.15, 8}, {0.05, 4}, {0.05, 2}}

// Synthetic returns a random heterogeneous graph with the topology of a
// data-centre cluster and uniform random features, for tests and
// benchmarks. Equal configurations give equal graphs.
func Synthetic(cfg SyntheticConfig) (*Graph, error) {
	if cfg.Machines <= 0 || cfg.RackSize <= 0 || cfg.JobsPerMachine < 0 {
		return nil, fmt.Errorf("gnn: synthetic graph: %d machines, racks of %d, %g jobs per machine", cfg.Machines, cfg.RackSize, cfg.JobsPerMachine)
	}
	d := cfg.Dims
	want := [NumRelations]int{Network: 3, PCIe: 1, NVLink: 2, RunsOnMachine: 3, RunsOnGPU: 1}
	for r := Network; r <= RunsOnGPU; r++ {
		if d.Edge[r] < want[r] {
			return nil, fmt.Errorf("gnn: synthetic graph: relation %s needs at least %d edge features, have %d", r, want[r], d.Edge[r])
		}
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x676e6e2d73796e74)) // "gnn-synt"
	m := cfg.Machines
	gpus := make([]int, m)    // GPUs per machine
	gpuBase := make([]int, m) // first GPU of each machine
	ng := 0
	for r0 := 0; r0 < m; r0 += cfg.RackSize {
		u, k := rng.Float64(), 0
		for !cfg.CPUOnly && k < len(synthSKUs)-1 && u >= synthSKUs[k].share {
			u -= synthSKUs[k].share
			k++
		}
		for i := r0; i < min(r0+cfg.RackSize, m); i++ {
			gpus[i], gpuBase[i] = synthSKUs[k].gpus, ng
			ng += gpus[i]
		}
	}
	nj := int(cfg.JobsPerMachine*float64(m) + 0.5)
	g := &Graph{
		Nodes:           [NumNodeTypes]int{m, ng, nj},
		FeatDim:         d.Feat,
		HistoryLen:      d.HistoryLen,
		HistoryChannels: d.HistoryChannels,
	}
	for t := range g.Feat {
		g.Feat[t] = uniform(rng, g.Nodes[t]*d.Feat[t])
	}
	g.History = uniform(rng, m*d.HistoryLen*d.HistoryChannels)
	g.Global = uniform(rng, d.Global)

	var el edgeList
	// Network: rack cliques plus rails to the neighbouring racks.
	nracks := (m + cfg.RackSize - 1) / cfg.RackSize
	for i := 0; i < m; i++ {
		rack, pos := i/cfg.RackSize, i%cfg.RackSize
		for j := rack * cfg.RackSize; j < min((rack+1)*cfg.RackSize, m); j++ {
			if j != i {
				el.add(rng, j, i, d.Edge[Network], 1, 0.01, 1)
			}
		}
		for _, dr := range []int{-1, 1} {
			if nracks < 3 && dr == 1 {
				break // two racks: one rail, not two copies of it
			}
			if r := (rack + dr + nracks) % nracks; r != rack {
				if j := r*cfg.RackSize + pos; j < m {
					el.add(rng, j, i, d.Edge[Network], 0.25, 0.05, 0)
				}
			}
		}
	}
	el.set(&g.Adj[Network], m, d.Edge[Network])
	// PCIe and NVLink: each GPU to its host, GPUs of a machine all-to-all.
	for i := 0; i < m; i++ {
		for a := 0; a < gpus[i]; a++ {
			el.add(rng, gpuBase[i]+a, i, d.Edge[PCIe], float32(2*a/max(gpus[i], 1)))
		}
	}
	el.set(&g.Adj[PCIe], m, d.Edge[PCIe])
	for i := 0; i < m; i++ {
		for a := 0; a < gpus[i]; a++ {
			for b := 0; b < gpus[i]; b++ {
				if a != b {
					el.add(rng, gpuBase[i]+b, gpuBase[i]+a, d.Edge[NVLink], b2f(a/4 == b/4), b2f(2*a/gpus[i] == 2*b/gpus[i]))
				}
			}
		}
	}
	el.set(&g.Adj[NVLink], ng, d.Edge[NVLink])
	// Runs-on: job 0 is pending; the others run on uniformly drawn
	// machines, numbered machine by machine as env numbers its job rows
	// (which keeps the machines a stretch of jobs touches close in memory).
	host := make([]int, nj)
	for j := 1; j < nj; j++ {
		host[j] = rng.IntN(m)
	}
	slices.Sort(host[min(1, nj):]) // job 0, if any, stays pending
	var onGPU edgeList
	for j := 1; j < nj; j++ {
		i := host[j]
		el.add(rng, j, i, d.Edge[RunsOnMachine], rng.Float32(), rng.Float32(), rng.Float32())
		if gpus[i] > 0 && rng.IntN(2) == 0 {
			k := 1 + rng.IntN(min(4, gpus[i]))
			first := rng.IntN(gpus[i] - k + 1)
			for a := first; a < first+k; a++ {
				onGPU.add(rng, j, gpuBase[i]+a, d.Edge[RunsOnGPU], rng.Float32())
			}
		}
	}
	el.set(&g.Adj[RunsOnMachine], m, d.Edge[RunsOnMachine])
	onGPU.set(&g.Adj[RunsOnGPU], ng, d.Edge[RunsOnGPU])
	g.SetReverses()
	return g, g.Validate()
}

// SetReverses fills the reverse relations (HostsGPU, HostsJob, ServesJob)
// by transposing their forward relations.
func (g *Graph) SetReverses() {
	for r := Relation(0); r < NumRelations; r++ {
		if f, ok := r.Reverses(); ok {
			g.Adj[f].Transpose(&g.Adj[r], g.Nodes[f.Src()])
		}
	}
}

// edgeList accumulates a relation's edges for CSR.SetCOO.
type edgeList struct {
	src, dst []int32
	feat     []float32
}

// add appends src → dst with features vals, padded with random values
// in [0, 1) up to width w.
func (l *edgeList) add(rng *rand.Rand, src, dst, w int, vals ...float32) {
	l.src, l.dst = append(l.src, int32(src)), append(l.dst, int32(dst))
	for k := 0; k < w; k++ {
		if k < len(vals) {
			l.feat = append(l.feat, vals[k])
		} else {
			l.feat = append(l.feat, rng.Float32())
		}
	}
}

// set writes the edges into c and empties the list.
func (l *edgeList) set(c *CSR, numDst, w int) {
	c.SetCOO(numDst, l.src, l.dst, l.feat, w)
	l.src, l.dst, l.feat = l.src[:0], l.dst[:0], l.feat[:0]
}

func uniform(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = rng.Float32()
	}
	return s
}

func b2f(b bool) float32 {
	if b {
		return 1
	}
	return 0
}
