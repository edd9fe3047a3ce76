package gnn

import (
	"fmt"
	"slices"

	"github.com/tegrl/tegrl/env"
)

// envRelation maps each environment relation to this package's.
var envRelation = [env.NumRelations]Relation{
	env.RelNetwork:       Network,
	env.RelPCIe:          PCIe,
	env.RelNVLink:        NVLink,
	env.RelRunsOnMachine: RunsOnMachine,
	env.RelRunsOnGPU:     RunsOnGPU,
}

// EnvDims returns the input widths of the environment's observation
// layout; encoders for graphs from a [Builder] are built for them.
func EnvDims() Dims {
	d := Dims{
		Feat:            [NumNodeTypes]int{Machine: env.MachineFeatures, GPU: env.GPUFeatures, Job: env.JobFeatures},
		HistoryLen:      env.HistoryLen,
		HistoryChannels: env.HistoryChannels,
		Global:          env.GlobalFeatures,
	}
	for er, r := range envRelation {
		d.Edge[r] = env.EdgeFeatures(env.Relation(er))
	}
	for r := Relation(0); r < NumRelations; r++ {
		if f, ok := r.Reverses(); ok {
			d.Edge[r] = d.Edge[f]
		}
	}
	return d
}

// Builder turns the environment's observation tensors into a [Graph] and
// keeps it up to date as the simulation runs.
//
// The observation lists every relation as an edge list; a graph wants
// destination-major CSR. The hardware relations (network, PCIe, NVLink and
// the PCIe reverse) do not change while the cluster stays the same:
// machines that fail keep their edges and only their features say they are
// down. The builder keeps a copy of the edge lists it built them from and,
// on each Update, rebuilds them only when the lists differ (a comparison of
// memory, not a rebuild: a new cluster). The runs-on relations and their
// reverses change whenever a job starts, ends or moves, and since job rows
// are numbered machine by machine, a start shifts the index of every later
// job; they are rebuilt by a counting sort, linear in the running jobs,
// when their edge lists changed. Node features, history and global
// features are not copied: the graph's slices refer to the tensors'.
//
// Update allocates nothing once its buffers have grown to the cluster's
// size. A Builder is not safe for concurrent use.
type Builder struct {
	g    Graph
	last [env.NumRelations]struct {
		src, dst []int32
		feat     []float32
		ns, nd   int // node counts the CSRs were built for
		ok       bool
	}

	// Builds counts the relations built, per relation: for tests and
	// monitoring of the incremental path.
	Builds [NumRelations]int
}

// NewBuilder returns an empty builder.
func NewBuilder() *Builder { return new(Builder) }

// Build converts t into a new graph from scratch.
func Build(t *env.Tensors) (*Graph, error) { return NewBuilder().Update(t) }

// Update brings the builder's graph up to date with t and returns it. The
// graph refers to t's buffers and to the builder's; it is valid until the
// next Update or until t is refreshed.
func (b *Builder) Update(t *env.Tensors) (*Graph, error) {
	if err := checkTensors(t); err != nil {
		return nil, err
	}
	g := &b.g
	g.Nodes = [NumNodeTypes]int{Machine: t.Machines, GPU: t.GPUs, Job: t.Jobs}
	g.FeatDim = [NumNodeTypes]int{Machine: env.MachineFeatures, GPU: env.GPUFeatures, Job: env.JobFeatures}
	g.Feat = [NumNodeTypes][]float32{
		Machine: t.Machine[:t.Machines*env.MachineFeatures],
		GPU:     t.GPU[:t.GPUs*env.GPUFeatures],
		Job:     t.Job[:t.Jobs*env.JobFeatures],
	}
	g.History = t.History[:t.Machines*env.HistoryLen*env.HistoryChannels]
	g.HistoryLen, g.HistoryChannels = env.HistoryLen, env.HistoryChannels
	g.Global = t.Global[:env.GlobalFeatures]
	for er, r := range envRelation {
		e := &t.Edges[er]
		last := &b.last[er]
		// A relation whose node counts changed is rebuilt even when its
		// list did not (an empty list over a new number of nodes).
		ns, nd := g.Nodes[r.Src()], g.Nodes[r.Dst()]
		if last.ok && last.ns == ns && last.nd == nd && slices.Equal(last.src, e.Src) && slices.Equal(last.dst, e.Dst) && slices.Equal(last.feat, e.Feat) {
			continue
		}
		if err := checkEdgeList(e, ns, nd, env.EdgeFeatures(env.Relation(er))); err != nil {
			last.ok = false
			return nil, fmt.Errorf("gnn: observation: relation %s: %w", r, err)
		}
		g.Adj[r].SetCOO(nd, e.Src, e.Dst, e.Feat, env.EdgeFeatures(env.Relation(er)))
		b.Builds[r]++
		for rev := Relation(0); rev < NumRelations; rev++ {
			if f, ok := rev.Reverses(); ok && f == r {
				g.Adj[r].Transpose(&g.Adj[rev], ns)
				b.Builds[rev]++
			}
		}
		last.src = append(last.src[:0], e.Src...)
		last.dst = append(last.dst[:0], e.Dst...)
		last.feat = append(last.feat[:0], e.Feat...)
		last.ns, last.nd, last.ok = ns, nd, true
	}
	return g, nil
}

// checkTensors reports tensors whose buffers are shorter than their node
// counts say (a Tensors never refreshed, or corrupted).
func checkTensors(t *env.Tensors) error {
	switch {
	case t.Machines < 0 || t.GPUs < 0 || t.Jobs < 0:
		return fmt.Errorf("gnn: observation: %d machines, %d GPUs, %d jobs", t.Machines, t.GPUs, t.Jobs)
	case len(t.Machine) < t.Machines*env.MachineFeatures:
		return fmt.Errorf("gnn: observation: %d machine values for %d machines", len(t.Machine), t.Machines)
	case len(t.GPU) < t.GPUs*env.GPUFeatures:
		return fmt.Errorf("gnn: observation: %d GPU values for %d GPUs", len(t.GPU), t.GPUs)
	case len(t.Job) < t.Jobs*env.JobFeatures:
		return fmt.Errorf("gnn: observation: %d job values for %d jobs", len(t.Job), t.Jobs)
	case len(t.History) < t.Machines*env.HistoryLen*env.HistoryChannels:
		return fmt.Errorf("gnn: observation: %d history values for %d machines", len(t.History), t.Machines)
	case len(t.Global) < env.GlobalFeatures:
		return fmt.Errorf("gnn: observation: %d global values, want %d", len(t.Global), env.GlobalFeatures)
	}
	return nil
}

// checkEdgeList validates an edge list before it is sorted into a CSR.
func checkEdgeList(e *env.Edges, ns, nd, fd int) error {
	if len(e.Dst) != len(e.Src) || len(e.Feat) != len(e.Src)*fd {
		return fmt.Errorf("%d sources, %d destinations, %d feature values (width %d)", len(e.Src), len(e.Dst), len(e.Feat), fd)
	}
	for k, s := range e.Src {
		if d := e.Dst[k]; s < 0 || int(s) >= ns || d < 0 || int(d) >= nd {
			return fmt.Errorf("edge %d: %d → %d out of range (%d sources, %d destinations)", k, s, d, ns, nd)
		}
	}
	return nil
}
