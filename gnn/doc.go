// Package gnn encodes a cluster's state, as a heterogeneous graph, into
// node and graph embeddings for the learned scheduler.
//
// # The graph
//
// A [Graph] has three node types (machines, GPUs, jobs), each with its own
// feature matrix, a 12-step load history per machine, global features, and
// eight directed relations: the five of the environment's observation
// (network links, PCIe, NVLink/NUMA, runs-on-machine, runs-on-GPU) and the
// reverses of the three that cross node types, so that information flows
// both ways. Each relation is a [CSR] adjacency stored destination-major
// (for each destination node, its in-edges' sources and edge features):
// aggregating a node's messages is then a pass over contiguous memory.
//
// A [Builder] makes a Graph from the environment's [env.Tensors] and keeps
// it current: the hardware relations are built once per cluster (a machine
// that fails keeps its edges; its features say it is down), the runs-on
// relations are rebuilt, linearly in the running jobs, only when they
// changed. [Synthetic] makes cluster-shaped random graphs for tests and
// benchmarks without a simulation.
//
// A [Sampler] bounds each node's in-edges per relation to a fixed fanout
// (default 10), uniformly without replacement, seeded and deterministic.
//
// # Layers
//
// Layers follow [nn]'s conventions: parameters are registered in an
// [nn.Params] registry (so optimisers and safetensors files see them),
// forward passes are recorded on an [nn.Tape] and differentiated by it,
// and everything is generic over [nn.Float]: models run in float32, and
// the tests check every gradient in float64 against finite differences.
// Because the tape is define-by-run, every layer works on graphs of any
// size and shape with nothing compiled or rebuilt.
//
//   - [SAGE]: h_i' = W_root·h_i + W_neigh·mean_{j→i} h_j + b.
//   - [EdgeConv]: messages MLP([x_i, x_j − x_i, e_ij]), max or mean.
//   - [HeteroConv]: one convolution per relation into each destination
//     type, summed, plus one root term per type.
//   - [Temporal]: a 1-D convolution (kernel 3) over each machine's load
//     history, then pooling over time with weights ∝ exp(−τ·Δt), τ = 0.1.
//   - [Pool]: per-graph readout, the mean and max of a node set.
//   - [Encoder]: temporal encoder, input projections, three heterogeneous
//     layers of width 64, pooled graph embedding; saved and loaded as
//     safetensors with its configuration in the metadata.
//
// A [Batch] converts a graph into tensors of the model's float type and
// holds the per-edge constants layers share (mean-aggregation weights).
//
// # Speed
//
// No numeric kernel lives here: matrix products, gathers, segment
// reductions and the sparse-dense product that does message passing
// ([nn.Tape.SpMM]) are nn's. The layers are arranged to do little work
// per edge: aggregation is fused with the gather (no edge-sized
// intermediate), SAGE multiplies on whichever side of an edge has fewer
// rows, counting only the rows its edges touch (a relation into GPUs
// reaches the machines that have them, not all machines), a relation
// without edges is skipped, EdgeConv multiplies node rows rather than
// edge rows (its first
// layer is linear in [x_i, x_j − x_i, e_ij]), and a heterogeneous layer
// multiplies each type's root term once, not once per relation. A type's
// terms are summed by [nn.Tape.SumTerms]: the products accumulate into
// the one result and the activation is applied as it is stored, so no
// term is kept on its own. Buffers
// are reused from pass to pass: a warm forward and backward pass over a
// graph of unchanged size allocates almost nothing. See docs/PERFORMANCE.md.
package gnn
