package rl

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/gnn"
	"github.com/tegrl/tegrl/nn"
)

// EncoderGNN is PolicyConfig.Encoder for the graph encoder: the candidates
// of a decision and its pending job form a small heterogeneous graph
// (machine and job nodes; network links between candidates, job → machine
// edges), each machine's load history goes through the temporal encoder,
// and a heterogeneous SAGE convolution mixes rack-mates and the job into
// every candidate's embedding (package gnn's layers). The graph is the
// candidate set, sampled as for the MLP encoder, so a decision stays
// O(Candidates) in cluster size: the sampled-subgraph form of the
// cluster-wide encoder, whose cost grows with the cluster.
const EncoderGNN = "gnn"

// Graph rows: per candidate, its load history (env.HistoryLen steps of
// env.HistoryChannels, oldest first, as in the observation) and its place
// in the topology: rack, leaf and position in the rack (indices, compared
// for equality only).
const (
	graphHistory  = env.HistoryLen * env.HistoryChannels
	graphRack     = graphHistory
	graphLeaf     = graphHistory + 1
	graphPos      = graphHistory + 2
	GraphFeatures = graphHistory + 3

	// temporalOut is the width of the temporal encoder's output.
	temporalOut = 16
)

// linked reports whether two candidates' graph rows are joined by the
// network relation: the observation's network links machines of one rack
// and machines at the same position in the racks of one leaf (a rail).
func linked(a, b []float32) bool {
	return a[graphRack] == b[graphRack] || (a[graphLeaf] == b[graphLeaf] && a[graphPos] == b[graphPos])
}

// fillGraph writes the graph rows of the candidates cand into g.
func (f *Featurizer) fillGraph(g []float32, st *env.State, hist []float32, cand []int) {
	c := st.C
	if f.topo != c {
		// Positions in the rack, computed once per cluster.
		f.topo = c
		f.pos = resize(f.pos, len(c.Machines))
		for r := range c.Racks {
			for p, m := range c.Racks[r].Machines {
				f.pos[m] = int32(p)
			}
		}
	}
	for k, i := range cand {
		row := g[k*GraphFeatures : (k+1)*GraphFeatures]
		copy(row[:graphHistory], hist[i*graphHistory:(i+1)*graphHistory])
		rack := c.Machines[i].Rack
		row[graphRack] = float32(rack)
		row[graphLeaf] = float32(c.Racks[rack].Leaf)
		row[graphPos] = float32(f.pos[i])
	}
}

// candGraph is the batch form of samples' candidate graphs: the histories
// and the two relations over the B·K candidate rows.
type candGraph struct {
	hist     *nn.Tensor[float32] // [B·K × HistoryLen × HistoryChannels]
	netAdj   gnn.CSR             // candidate → candidate (valid rows only)
	jobAdj   gnn.CSR             // sample's job → each of its candidate rows
	net, job gnn.Edges[float32]
}

// gatherGraph builds the candidate graphs of samples idx.
func (s *Samples) gatherGraph(idx []int) *candGraph {
	if !s.WithGraph {
		panic("rl: the GNN encoder needs samples with graph rows (Samples.WithGraph)")
	}
	B, K := len(idx), s.K
	g := &s.graph
	g.hist = tensor3(g.hist, B*K, env.HistoryLen, env.HistoryChannels)
	net, job := &g.netAdj, &g.jobAdj
	net.Ptr, net.Src, net.Dst = append(net.Ptr[:0], 0), net.Src[:0], net.Dst[:0]
	job.Ptr, job.Src, job.Dst = append(job.Ptr[:0], 0), job.Src[:0], job.Dst[:0]
	for b, i := range idx {
		rows := s.graphRows(i)
		v := int(s.Valid[i])
		for k := 0; k < K; k++ {
			r := b*K + k
			copy(g.hist.Data[r*graphHistory:(r+1)*graphHistory], rows[k*GraphFeatures:k*GraphFeatures+graphHistory])
			if k < v {
				rk := rows[k*GraphFeatures : (k+1)*GraphFeatures]
				for k2 := 0; k2 < v; k2++ {
					if k2 != k && linked(rk, rows[k2*GraphFeatures:(k2+1)*GraphFeatures]) {
						net.Src = append(net.Src, b*K+k2)
						net.Dst = append(net.Dst, r)
					}
				}
			}
			net.Ptr = append(net.Ptr, len(net.Src))
			job.Src, job.Dst = append(job.Src, b), append(job.Dst, r)
			job.Ptr = append(job.Ptr, len(job.Src))
		}
	}
	g.net.Load(net, B*K)
	g.job.Load(job, B)
	return g
}

func tensor3(t *nn.Tensor[float32], a, b, c int) *nn.Tensor[float32] {
	if t == nil {
		return nn.Zeros[float32](a, b, c)
	}
	return t.Resize(a, b, c)
}

// gnnEncoder embeds the candidates of a batch of decisions (EncoderGNN).
type gnnEncoder struct {
	temporal *gnn.Temporal[float32]
	in       *nn.Linear[float32] // [candidate row ‖ temporal] → hidden
	net      *gnn.SAGE[float32]  // network relation, with the machines' root term and bias
	job      *gnn.SAGE[float32]  // job → machine messages
}

func newGNNEncoder(ps *nn.Params[float32], h int, rng *rand.Rand) *gnnEncoder {
	return &gnnEncoder{
		temporal: gnn.NewTemporal(ps, "enc.temporal", env.HistoryChannels, temporalOut, gnn.DefaultTau, nn.ActTanh, rng),
		in:       nn.NewLinear(ps, "enc.in", CandFeatures+temporalOut, h, rng),
		net:      gnn.NewSAGE(ps, "enc.net", h, h, h, rng),
		job:      gnn.NewSAGEMessages(ps, "enc.job", h, h, rng),
	}
}

// init starts the encoder as the MLP encoder it extends: orthogonal
// weights with gain √2 on the input layer and the root term (the MLP's two
// layers), zero biases, and zero weights on the messages, so that an
// untrained policy scores each candidate on its own row and history and
// learning grows the neighbours' and the job's terms where they help. (A
// first run with every weight Xavier-initialised kept its placement
// entropy at ln 16 for a million decisions.)
func (e *gnnEncoder) init(rng *rand.Rand) {
	nn.Orthogonal(e.in.W, math.Sqrt2, rng)
	clear(e.in.B.Data)
	nn.Orthogonal(e.net.Root, math.Sqrt2, rng)
	clear(e.net.Bias.Data)
	clear(e.net.Neigh.Data)
	clear(e.job.Neigh.Data)
}

// gnnParams is the number of parameters of newGNNEncoder(h).
func gnnParams(h int) int {
	return gnn.TemporalKernel*env.HistoryChannels*temporalOut + temporalOut + // temporal
		(CandFeatures+temporalOut)*h + h + // in
		3*h*h + h // net (neigh, root, bias) and job (neigh)
}

// forward returns the candidate embeddings [B·K × H] from the candidate
// rows xc, the context embeddings hg [B × H] (the job nodes) and the
// graphs g.
func (e *gnnEncoder) forward(tp *nn.Tape[float32], xc, hg *nn.Tensor[float32], g *candGraph) *nn.Tensor[float32] {
	if xc.Shape[0] != g.hist.Shape[0] {
		panic(fmt.Sprintf("rl: GNN encoder: %d candidate rows, %d histories", xc.Shape[0], g.hist.Shape[0]))
	}
	t := e.temporal.Forward(tp, g.hist)                  // [B·K × 16]
	h0 := tp.Tanh(e.in.Forward(tp, tp.Concat(xc, t, 1))) // [B·K × H]
	h1 := e.net.Forward(tp, h0, h0, &g.net)              // W_root·h + W_net·mean over linked candidates + b
	return tp.Tanh(tp.Add(h1, e.job.Messages(tp, hg, h0, &g.job)))
}
