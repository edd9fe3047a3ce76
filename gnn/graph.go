package gnn

import (
	"fmt"
	"strconv"
)

// NodeType is a node type of the heterogeneous graph.
type NodeType int

// The node types.
const (
	Machine NodeType = iota
	GPU
	Job
	// NumNodeTypes is the number of node types.
	NumNodeTypes = iota
)

var nodeTypeNames = [NumNodeTypes]string{"machine", "gpu", "job"}

func (t NodeType) String() string {
	if t >= 0 && int(t) < NumNodeTypes {
		return nodeTypeNames[t]
	}
	return "node(" + strconv.Itoa(int(t)) + ")"
}

// Relation is an edge type of the heterogeneous graph. Every relation is
// directed, from a source node type to a destination node type; messages
// flow from sources to destinations. The first five mirror the
// environment's observation; the last three are their reverses, so that
// information also flows from machines to their GPUs and jobs and from
// GPUs to their jobs.
type Relation int

// The relations.
const (
	Network       Relation = iota // machine → machine: network links (symmetric)
	PCIe                          // GPU → machine: the GPU's host
	NVLink                        // GPU → GPU: same machine, NVLink group or NUMA socket (symmetric)
	RunsOnMachine                 // job → machine
	RunsOnGPU                     // job → GPU
	HostsGPU                      // machine → GPU: reverse of PCIe
	HostsJob                      // machine → job: reverse of RunsOnMachine
	ServesJob                     // GPU → job: reverse of RunsOnGPU
	// NumRelations is the number of relations.
	NumRelations = iota
)

var relationInfo = [NumRelations]struct {
	name     string
	src, dst NodeType
	reverse  Relation // the relation this one reverses, or itself
	dynamic  bool     // changes when jobs start and end
}{
	Network:       {"network", Machine, Machine, Network, false},
	PCIe:          {"pcie", GPU, Machine, PCIe, false},
	NVLink:        {"nvlink", GPU, GPU, NVLink, false},
	RunsOnMachine: {"runs_on_machine", Job, Machine, RunsOnMachine, true},
	RunsOnGPU:     {"runs_on_gpu", Job, GPU, RunsOnGPU, true},
	HostsGPU:      {"hosts_gpu", Machine, GPU, PCIe, false},
	HostsJob:      {"hosts_job", Machine, Job, RunsOnMachine, true},
	ServesJob:     {"serves_job", GPU, Job, RunsOnGPU, true},
}

func (r Relation) String() string {
	if r >= 0 && int(r) < NumRelations {
		return relationInfo[r].name
	}
	return "relation(" + strconv.Itoa(int(r)) + ")"
}

// Src returns the relation's source node type.
func (r Relation) Src() NodeType { return relationInfo[r].src }

// Dst returns the relation's destination node type.
func (r Relation) Dst() NodeType { return relationInfo[r].dst }

// Reverses returns the relation r is the reverse of, and true; or r and
// false for a relation that is not a reverse.
func (r Relation) Reverses() (Relation, bool) {
	f := relationInfo[r].reverse
	return f, f != r
}

// Dynamic reports whether the relation's edges change as jobs start and
// end (the runs-on relations and their reverses). The others depend on
// the cluster's hardware only.
func (r Relation) Dynamic() bool { return relationInfo[r].dynamic }

// CSR is one relation's adjacency in compressed sparse row form,
// destination-major: the edges into destination node i are
// Ptr[i] ≤ e < Ptr[i+1], with source node Src[e] and feature row
// Feat[e*FeatDim:(e+1)*FeatDim]. Dst[e] repeats i for every such edge; it
// is redundant with Ptr but is what segment reductions take.
//
// Destination-major order is what aggregation wants: the messages into a
// node are contiguous, so a mean or a max is one pass with the output row
// in registers, and a backward pass scatters into sources.
type CSR struct {
	Ptr     []int // len = destination nodes + 1
	Src     []int
	Dst     []int
	Feat    []float32 // [edges × FeatDim]
	FeatDim int
}

// NumDst returns the number of destination nodes.
func (c *CSR) NumDst() int { return max(len(c.Ptr)-1, 0) }

// Len returns the number of edges.
func (c *CSR) Len() int { return len(c.Src) }

// Degree returns the number of edges into destination i.
func (c *CSR) Degree(i int) int { return c.Ptr[i+1] - c.Ptr[i] }

// Neighbors returns the sources of the edges into destination i.
func (c *CSR) Neighbors(i int) []int { return c.Src[c.Ptr[i]:c.Ptr[i+1]] }

// EdgeFeat returns the feature row of edge e.
func (c *CSR) EdgeFeat(e int) []float32 { return c.Feat[e*c.FeatDim : (e+1)*c.FeatDim] }

// Reset empties c for numDst destination nodes, keeping its buffers.
func (c *CSR) Reset(numDst, featDim int) {
	c.Ptr = grow(c.Ptr, numDst+1)
	clear(c.Ptr)
	c.Src, c.Dst, c.Feat = c.Src[:0], c.Dst[:0], c.Feat[:0]
	c.FeatDim = featDim
}

// SetCOO fills c from an edge list (src[k] → dst[k], features
// feat[k*featDim:(k+1)*featDim]) by a counting sort on the destination.
// The sort is stable: the edges into one destination keep their order in
// the list, so equal inputs give equal graphs. It reuses c's buffers.
func (c *CSR) SetCOO(numDst int, src, dst []int32, feat []float32, featDim int) {
	if len(src) != len(dst) || len(feat) != len(src)*featDim {
		panic(fmt.Sprintf("gnn: SetCOO: %d sources, %d destinations, %d feature values (width %d)", len(src), len(dst), len(feat), featDim))
	}
	c.Reset(numDst, featDim)
	for _, d := range dst {
		c.Ptr[d+1]++
	}
	for i := 0; i < numDst; i++ {
		c.Ptr[i+1] += c.Ptr[i]
	}
	n := len(src)
	c.Src, c.Dst, c.Feat = grow(c.Src, n), grow(c.Dst, n), grow(c.Feat, n*featDim)
	// Place edges using Ptr[d] as the running insertion point of d, then
	// shift the pointers back.
	for k, d := range dst {
		e := c.Ptr[d]
		c.Ptr[d]++
		c.Src[e], c.Dst[e] = int(src[k]), int(d)
		copy(c.Feat[e*featDim:(e+1)*featDim], feat[k*featDim:(k+1)*featDim])
	}
	copy(c.Ptr[1:], c.Ptr[:numDst])
	c.Ptr[0] = 0
}

// Transpose fills t with the reverse of c: an edge s → d of c becomes
// d → s of t, with the same features; numSrc is the number of c's source
// nodes (t's destinations). Within a destination of t, edges are ordered
// by their destination in c.
func (c *CSR) Transpose(t *CSR, numSrc int) {
	t.Reset(numSrc, c.FeatDim)
	for _, s := range c.Src {
		t.Ptr[s+1]++
	}
	for i := 0; i < numSrc; i++ {
		t.Ptr[i+1] += t.Ptr[i]
	}
	n, fd := c.Len(), c.FeatDim
	t.Src, t.Dst, t.Feat = grow(t.Src, n), grow(t.Dst, n), grow(t.Feat, n*fd)
	for e, s := range c.Src {
		k := t.Ptr[s]
		t.Ptr[s]++
		t.Src[k], t.Dst[k] = c.Dst[e], s
		copy(t.Feat[k*fd:(k+1)*fd], c.Feat[e*fd:(e+1)*fd])
	}
	copy(t.Ptr[1:], t.Ptr[:numSrc])
	t.Ptr[0] = 0
}

// Validate checks that c is a well-formed adjacency between numSrc
// source and numDst destination nodes.
func (c *CSR) Validate(numSrc, numDst int) error {
	if len(c.Ptr) != numDst+1 {
		return fmt.Errorf("row pointer has %d entries for %d destinations", len(c.Ptr), numDst)
	}
	if c.Ptr[0] != 0 || c.Ptr[numDst] != len(c.Src) {
		return fmt.Errorf("row pointer spans [%d, %d), want [0, %d)", c.Ptr[0], c.Ptr[numDst], len(c.Src))
	}
	if len(c.Dst) != len(c.Src) {
		return fmt.Errorf("%d destinations for %d edges", len(c.Dst), len(c.Src))
	}
	if c.FeatDim < 0 || len(c.Feat) != len(c.Src)*c.FeatDim {
		return fmt.Errorf("%d feature values for %d edges of width %d", len(c.Feat), len(c.Src), c.FeatDim)
	}
	for i := 0; i < numDst; i++ {
		if c.Ptr[i+1] < c.Ptr[i] {
			return fmt.Errorf("row pointer decreases at destination %d", i)
		}
		for e := c.Ptr[i]; e < c.Ptr[i+1]; e++ {
			if c.Dst[e] != i {
				return fmt.Errorf("edge %d: destination %d, want %d", e, c.Dst[e], i)
			}
			if s := c.Src[e]; s < 0 || s >= numSrc {
				return fmt.Errorf("edge %d: source %d out of range [0, %d)", e, s, numSrc)
			}
		}
	}
	return nil
}

// Graph is a heterogeneous graph: node feature matrices per node type, a
// load history per machine, global features, and a CSR adjacency per
// relation. Storage is float32, as observations come; [Batch] converts to
// the float type a model runs in.
type Graph struct {
	Nodes   [NumNodeTypes]int       // node count per type
	FeatDim [NumNodeTypes]int       // feature width per type
	Feat    [NumNodeTypes][]float32 // [Nodes[t] × FeatDim[t]], row-major

	// History is the machines' load history, [machines × HistoryLen ×
	// HistoryChannels], oldest step first (the last step is "now").
	History         []float32
	HistoryLen      int
	HistoryChannels int

	Global []float32 // graph-level features

	Adj [NumRelations]CSR
}

// Validate checks every shape and index of g.
func (g *Graph) Validate() error {
	for t := NodeType(0); t < NumNodeTypes; t++ {
		if g.Nodes[t] < 0 || g.FeatDim[t] < 0 || len(g.Feat[t]) != g.Nodes[t]*g.FeatDim[t] {
			return fmt.Errorf("gnn: graph: %s features: %d values for %d nodes of width %d", t, len(g.Feat[t]), g.Nodes[t], g.FeatDim[t])
		}
	}
	if want := g.Nodes[Machine] * g.HistoryLen * g.HistoryChannels; len(g.History) != want {
		return fmt.Errorf("gnn: graph: history has %d values, want %d (%d machines × %d steps × %d channels)",
			len(g.History), want, g.Nodes[Machine], g.HistoryLen, g.HistoryChannels)
	}
	for r := Relation(0); r < NumRelations; r++ {
		if err := g.Adj[r].Validate(g.Nodes[r.Src()], g.Nodes[r.Dst()]); err != nil {
			return fmt.Errorf("gnn: graph: relation %s: %w", r, err)
		}
	}
	return nil
}

// Edges returns the total number of edges over all relations.
func (g *Graph) Edges() int {
	n := 0
	for r := range g.Adj {
		n += g.Adj[r].Len()
	}
	return n
}

// TotalNodes returns the number of nodes over all types.
func (g *Graph) TotalNodes() int {
	n := 0
	for _, v := range g.Nodes {
		n += v
	}
	return n
}

// grow returns s resized to n, reallocating only when its capacity is short.
// Contents are undefined.
func grow[E any](s []E, n int) []E {
	if cap(s) < n {
		return make([]E, n, n+n/4)
	}
	return s[:n]
}
