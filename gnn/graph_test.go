package gnn

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func TestSetCOOAndTranspose(t *testing.T) {
	var c CSR
	// Edges given in no particular order; features identify them.
	c.SetCOO(4, []int32{2, 0, 1, 2, 0}, []int32{1, 3, 1, 0, 1}, []float32{10, 11, 12, 13, 14}, 1)
	if err := c.Validate(3, 4); err != nil {
		t.Fatal(err)
	}
	want := CSR{Ptr: []int{0, 1, 4, 4, 5}, Src: []int{2, 2, 1, 0, 0}, Dst: []int{0, 1, 1, 1, 3}, Feat: []float32{13, 10, 12, 14, 11}, FeatDim: 1}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("SetCOO: %+v\nwant %+v", c, want)
	}
	var tr, back CSR
	c.Transpose(&tr, 3)
	if err := tr.Validate(4, 3); err != nil {
		t.Fatal(err)
	}
	wantT := CSR{Ptr: []int{0, 2, 3, 5}, Src: []int{1, 3, 1, 0, 1}, Dst: []int{0, 0, 1, 2, 2}, Feat: []float32{14, 11, 12, 13, 10}, FeatDim: 1}
	if !reflect.DeepEqual(tr, wantT) {
		t.Fatalf("Transpose: %+v\nwant %+v", tr, wantT)
	}
	tr.Transpose(&back, 4)
	// Transposing twice gives the same edge multiset per destination.
	for i := 0; i < 4; i++ {
		a, b := edgesOf(&c, i), edgesOf(&back, i)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("destination %d: %v after two transposes, want %v", i, b, a)
		}
	}
}

// edgesOf returns destination i's (source, feature) pairs, sorted.
func edgesOf(c *CSR, i int) [][2]float32 {
	var out [][2]float32
	for e := c.Ptr[i]; e < c.Ptr[i+1]; e++ {
		out = append(out, [2]float32{float32(c.Src[e]), c.Feat[e*c.FeatDim]})
	}
	slices.SortFunc(out, func(a, b [2]float32) int {
		if a[0] != b[0] {
			return int(a[0] - b[0])
		}
		return int(a[1] - b[1])
	})
	return out
}

func TestValidateRejects(t *testing.T) {
	good := func() CSR {
		var c CSR
		c.SetCOO(2, []int32{0, 1}, []int32{1, 0}, []float32{1, 2}, 1)
		return c
	}
	for name, mutate := range map[string]func(c *CSR){
		"ptr length":  func(c *CSR) { c.Ptr = c.Ptr[:2] },
		"ptr end":     func(c *CSR) { c.Ptr[2] = 1 },
		"source":      func(c *CSR) { c.Src[0] = 5 },
		"destination": func(c *CSR) { c.Dst[0] = 1 },
		"features":    func(c *CSR) { c.Feat = c.Feat[:1] },
	} {
		c := good()
		mutate(&c)
		if c.Validate(2, 2) == nil {
			t.Errorf("%s: corrupted CSR accepted", name)
		}
	}
}

func TestSynthetic(t *testing.T) {
	g, err := Synthetic(DefaultSyntheticConfig(1200, 1))
	if err != nil {
		t.Fatal(err)
	}
	deg := float64(g.Adj[Network].Len()) / float64(g.Nodes[Machine])
	if deg < 8.5 || deg > 9.5 {
		t.Errorf("network degree %.2f, want about 9", deg)
	}
	if g.Nodes[GPU] < 1200 || g.Nodes[GPU] > 2400 || g.Nodes[Job] != 1200 {
		t.Errorf("nodes %v: want 1200-2400 GPUs and 1200 jobs", g.Nodes)
	}
	if g.Adj[PCIe].Len() != g.Nodes[GPU] || g.Adj[HostsGPU].Len() != g.Nodes[GPU] {
		t.Errorf("%d PCIe and %d reverse edges for %d GPUs", g.Adj[PCIe].Len(), g.Adj[HostsGPU].Len(), g.Nodes[GPU])
	}
	if g.Adj[HostsJob].Degree(0) != 0 || g.Adj[ServesJob].Degree(0) != 0 {
		t.Error("the pending job (job 0) runs somewhere")
	}
	cfg := DefaultSyntheticConfig(1200, 1)
	cfg.CPUOnly, cfg.JobsPerMachine = true, 0
	h, err := Synthetic(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if h.Nodes != [NumNodeTypes]int{1200, 0, 0} || h.Edges() != g.Adj[Network].Len() || !slices.Equal(h.Adj[Network].Src, g.Adj[Network].Src) {
		t.Errorf("CPU-only graph: nodes %v, %d edges; want 1200 machines and the %d network edges of the default graph", h.Nodes, h.Edges(), g.Adj[Network].Len())
	}
	g2, _ := Synthetic(DefaultSyntheticConfig(1200, 1))
	if !reflect.DeepEqual(g, g2) {
		t.Error("equal configurations gave different graphs")
	}
	if g.Dims() != SyntheticDims {
		t.Errorf("dims %+v, want %+v", g.Dims(), SyntheticDims)
	}
	for _, n := range []int{1, 7, 9, 17} { // one rack, two racks, partial racks
		if _, err := Synthetic(DefaultSyntheticConfig(n, 2)); err != nil {
			t.Errorf("%d machines: %v", n, err)
		}
	}
}

func TestSamplerFanout(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	g, err := Synthetic(DefaultSyntheticConfig(100, 3))
	if err != nil {
		t.Fatal(err)
	}
	// Add a few high-degree destinations to the network relation.
	var src, dst []int32
	var feat []float32
	for i := 0; i < 100; i++ {
		deg := rng.IntN(30)
		for k := 0; k < deg; k++ {
			s := rng.IntN(100)
			if k%7 == 6 {
				s = int(src[len(src)-1]) // repeated neighbours
			}
			src, dst = append(src, int32(s)), append(dst, int32(i))
			feat = append(feat, float32(len(feat)), 0, 0) // feature 0 names the edge
		}
	}
	g.Adj[Network].SetCOO(100, src, dst, feat, 3)
	for _, fanout := range []int{1, 3, 10, 0} {
		s := NewSampler(fanout, 7)
		var out Graph
		s.Sample(g, &out)
		if err := out.Validate(); err != nil {
			t.Fatalf("fanout %d: %v", fanout, err)
		}
		for r := Relation(0); r < NumRelations; r++ {
			in, o := &g.Adj[r], &out.Adj[r]
			for i := 0; i < in.NumDst(); i++ {
				want := in.Degree(i)
				if fanout > 0 {
					want = min(want, fanout)
				}
				if o.Degree(i) != want {
					t.Fatalf("fanout %d, %s, node %d: %d edges, want %d", fanout, r, i, o.Degree(i), want)
				}
				// Every sampled edge is a distinct edge of the input, in
				// input order, with its features.
				next := in.Ptr[i]
				for e := o.Ptr[i]; e < o.Ptr[i+1]; e++ {
					for next < in.Ptr[i+1] && !(in.Src[next] == o.Src[e] && slices.Equal(in.EdgeFeat(next), o.EdgeFeat(e))) {
						next++
					}
					if next == in.Ptr[i+1] {
						t.Fatalf("fanout %d, %s, node %d: sampled edge %d (source %d) is not an input edge in order", fanout, r, i, e, o.Src[e])
					}
					next++
				}
			}
		}
	}
}

func TestSamplerDeterminism(t *testing.T) {
	g, err := Synthetic(DefaultSyntheticConfig(64, 4))
	if err != nil {
		t.Fatal(err)
	}
	sample := func(seed uint64, times int) *Graph {
		s := NewSampler(3, seed)
		var out Graph
		for range times {
			s.Sample(g, &out)
		}
		return &out
	}
	a, b := sample(1, 2), sample(1, 2)
	if !reflect.DeepEqual(a.Adj, b.Adj) {
		t.Error("same seed, different samples")
	}
	if c := sample(2, 2); reflect.DeepEqual(a.Adj[Network], c.Adj[Network]) {
		t.Error("different seeds, same network sample")
	}
	if c := sample(1, 1); reflect.DeepEqual(a.Adj[Network], c.Adj[Network]) {
		t.Error("second draw equals the first")
	}
	s := NewSampler(3, 1)
	var first, again Graph
	s.Sample(g, &first)
	s.Seed(1)
	s.Sample(g, &again)
	if !reflect.DeepEqual(first.Adj, again.Adj) {
		t.Error("Seed does not restart the sequence")
	}
}

// TestSamplerShares: Sample shares a relation that no destination's
// degree exceeds the fanout of (the same edges, not copied), samples the
// others into its own buffers, and gives the graph SampleCSR gives, edge
// for edge, with the same random draws.
func TestSamplerShares(t *testing.T) {
	g, err := Synthetic(DefaultSyntheticConfig(200, 5))
	if err != nil {
		t.Fatal(err)
	}
	s, ref := NewSampler(5, 9), NewSampler(5, 9) // network degree 9 > 5; NVLink 7 > 5; PCIe 8 > 5
	var out Graph
	for round := range 3 {
		s.Sample(g, &out)
		for r := Relation(0); r < NumRelations; r++ {
			var want CSR
			ref.SampleCSR(&g.Adj[r], &want, 5)
			got := &out.Adj[r]
			if !slices.Equal(got.Ptr, want.Ptr) || !slices.Equal(got.Src, want.Src) || !slices.Equal(got.Feat, want.Feat) {
				t.Fatalf("round %d relation %s: sample differs from SampleCSR", round, r)
			}
			shared := len(got.Src) > 0 && &got.Src[0] == &g.Adj[r].Src[0]
			if over := maxDegree(&g.Adj[r]) > 5; over == shared {
				t.Errorf("round %d relation %s: max degree %d, shared %v", round, r, maxDegree(&g.Adj[r]), shared)
			}
		}
	}
}
