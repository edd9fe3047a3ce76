package gnn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/tegrl/tegrl/nn"
)

// Dims are the widths of a graph's inputs: what an [Encoder] is built for.
type Dims struct {
	Feat            [NumNodeTypes]int `json:"feat"`
	Edge            [NumRelations]int `json:"edge"`
	HistoryLen      int               `json:"history_len"`
	HistoryChannels int               `json:"history_channels"`
	Global          int               `json:"global"`
}

// Dims returns g's input widths.
func (g *Graph) Dims() Dims {
	d := Dims{Feat: g.FeatDim, HistoryLen: g.HistoryLen, HistoryChannels: g.HistoryChannels, Global: len(g.Global)}
	for r := range g.Adj {
		d.Edge[r] = g.Adj[r].FeatDim
	}
	return d
}

// EncoderConfig describes an [Encoder]'s architecture.
type EncoderConfig struct {
	Dims   Dims `json:"dims"`
	Hidden int  `json:"hidden"` // width of every embedding
	Layers int  `json:"layers"` // heterogeneous convolution layers
	// TemporalChannels is the temporal encoder's output width; 0 turns the
	// temporal encoder off (the history is then not read).
	TemporalChannels int                    `json:"temporal_channels"`
	Tau              float64                `json:"tau"`
	Conv             [NumRelations]ConvKind `json:"conv"`
	// EdgeHidden is the hidden width of EdgeConv MLPs; 0 makes them one
	// linear layer (as in DGL's EdgeConv).
	EdgeHidden int           `json:"edge_hidden"`
	Act        nn.Activation `json:"act"`
}

// DefaultEncoderConfig returns the default architecture for inputs of
// widths d: hidden 64, 3 layers, temporal encoder with 16 channels and
// τ = 0.1, ReLU; EdgeConv (max) on the network relation, whose edge
// features (bandwidth, latency) say how close two machines are, and SAGE
// on the relations into machines and GPUs.
//
// The relations into jobs (HostsJob, ServesJob) are off: the job a
// scheduler decides is pending, without edges, so messages into jobs only
// refine running jobs' embeddings, which reach the output through the
// graph pooling alone, at the cost of two products per layer.
func DefaultEncoderConfig(d Dims) EncoderConfig {
	c := EncoderConfig{Dims: d, Hidden: 64, Layers: 3, TemporalChannels: 16, Tau: DefaultTau, Act: nn.ActReLU}
	for r := range c.Conv {
		c.Conv[r] = ConvSAGE
	}
	c.Conv[Network] = ConvEdgeMax
	c.Conv[HostsJob], c.Conv[ServesJob] = ConvNone, ConvNone
	return c
}

func (c *EncoderConfig) validate() error {
	if c.Hidden <= 0 || c.Layers < 0 || c.TemporalChannels < 0 || c.EdgeHidden < 0 {
		return fmt.Errorf("gnn: encoder config: hidden %d, layers %d, temporal channels %d, edge hidden %d",
			c.Hidden, c.Layers, c.TemporalChannels, c.EdgeHidden)
	}
	if c.TemporalChannels > 0 && (c.Dims.HistoryLen <= 0 || c.Dims.HistoryChannels <= 0) {
		return fmt.Errorf("gnn: encoder config: temporal encoder on, history %d steps × %d channels", c.Dims.HistoryLen, c.Dims.HistoryChannels)
	}
	for r, k := range c.Conv {
		if k < ConvNone || k > ConvEdgeMean {
			return fmt.Errorf("gnn: encoder config: relation %s: unknown convolution %d", Relation(r), int(k))
		}
	}
	return nil
}

// Encoder turns a heterogeneous graph into node and graph embeddings:
//
//  1. the temporal encoder turns each machine's load history into
//     TemporalChannels features, appended to the machine's own;
//  2. one linear layer per node type maps its features to Hidden
//     (so that every later layer, and EdgeConv's x_j − x_i, sees one width);
//  3. Layers heterogeneous convolutions, with the activation after each
//     but the last;
//  4. the graph embedding: a linear layer on the mean and max pooled
//     embeddings of every node type and the global features.
//
// All parameters live in Params, so that optimisers and safetensors files
// see them. The forward pass is recorded on an [nn.Tape]: it works on
// graphs of any size with nothing rebuilt, and the tape's arena makes
// repeated passes over graphs of the same size allocation-free.
type Encoder[T nn.Float] struct {
	Config   EncoderConfig
	Params   *nn.Params[T]
	Temporal *Temporal[T] // nil when off
	Input    [NumNodeTypes]*nn.Linear[T]
	Layers   []*HeteroConv[T]
	Readout  *nn.Linear[T]

	pool [NumNodeTypes]Pool[T]
}

// Embeddings are an encoder's outputs, tape-owned (valid until the tape's
// next Reset).
type Embeddings[T nn.Float] struct {
	Node  [NumNodeTypes]*nn.Tensor[T] // [nodes of the type, Hidden]
	Graph *nn.Tensor[T]               // [1, Hidden]
}

// NewEncoder builds an encoder with parameters initialised from seed.
func NewEncoder[T nn.Float](cfg EncoderConfig, seed uint64) (*Encoder[T], error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x676e6e2d656e6364)) // "gnn-encd"
	ps := nn.NewParams[T]()
	e := &Encoder[T]{Config: cfg, Params: ps}
	h := cfg.Hidden
	in := cfg.Dims.Feat
	if cfg.TemporalChannels > 0 {
		e.Temporal = NewTemporal(ps, "temporal", cfg.Dims.HistoryChannels, cfg.TemporalChannels, cfg.Tau, cfg.Act, rng)
		in[Machine] += cfg.TemporalChannels
	}
	for t := NodeType(0); t < NumNodeTypes; t++ {
		e.Input[t] = nn.NewLinear(ps, "input."+t.String(), in[t], h, rng)
	}
	edgeSizes := []int{h}
	if cfg.EdgeHidden > 0 {
		edgeSizes = []int{cfg.EdgeHidden, h}
	}
	var hid [NumNodeTypes]int
	for t := range hid {
		hid[t] = h
	}
	for l := 0; l < cfg.Layers; l++ {
		e.Layers = append(e.Layers, NewHeteroConv(ps, fmt.Sprintf("layer%d", l), hid, h, cfg.Conv, cfg.Dims.Edge, edgeSizes, cfg.Act, rng))
	}
	e.Readout = nn.NewLinear(ps, "readout", NumNodeTypes*2*h+cfg.Dims.Global, h, rng)
	return e, nil
}

// Check reports whether b's input widths are the ones e was built for.
func (e *Encoder[T]) Check(b *Batch[T]) error {
	got, want := b.Graph.Dims(), e.Config.Dims
	if e.Config.TemporalChannels == 0 {
		got.HistoryLen, got.HistoryChannels = want.HistoryLen, want.HistoryChannels
	}
	if got != want {
		return fmt.Errorf("gnn: encoder built for inputs %+v, graph has %+v", want, got)
	}
	return nil
}

// Forward encodes b. It panics if b does not match the encoder's Dims
// (see Check).
func (e *Encoder[T]) Forward(tp *nn.Tape[T], b *Batch[T]) Embeddings[T] {
	if err := e.Check(b); err != nil {
		panic(err.Error())
	}
	x := b.X
	for t := range x {
		in := e.Input[t]
		if t == int(Machine) && e.Temporal != nil {
			// The input layer of [features, temporal encoding] as two
			// terms, each times its rows of the weights: the product of
			// the concatenation without copying it, and without a
			// gradient for the features, which need none.
			f, h := x[t].Shape[1], e.Temporal.Forward(tp, b.History)
			terms := [2]nn.Term[T]{{X: h, W: tp.Slice(in.W, 0, f, in.W.Shape[0])}, {X: x[t], W: tp.Slice(in.W, 0, 0, f)}}
			n := 2
			if f == 0 {
				n = 1
			}
			x[t] = tp.SumTerms(e.Config.Act, in.B, terms[:n]...)
			continue
		}
		x[t] = tp.SumTerms(e.Config.Act, in.B, nn.Term[T]{X: x[t], W: in.W})
	}
	for l, layer := range e.Layers {
		act := e.Config.Act
		if l+1 == len(e.Layers) {
			act = nn.ActIdentity
		}
		x = layer.ForwardAct(tp, x, b, act)
	}
	g := b.Global
	for t := NumNodeTypes - 1; t >= 0; t-- {
		g = tp.Concat(e.pool[t].Forward(tp, x[t]), g, 1)
	}
	return Embeddings[T]{Node: x, Graph: e.Readout.Forward(tp, g)}
}

// metaConfig is the safetensors metadata key of the encoder configuration.
const metaConfig = "gnn_encoder_config"

// Save writes the encoder's parameters as safetensors, with its
// configuration (JSON) and meta in the file's metadata.
func (e *Encoder[T]) Save(w io.Writer, meta map[string]string) error {
	cfg, err := json.Marshal(e.Config)
	if err != nil {
		return fmt.Errorf("gnn: encoding encoder config: %w", err)
	}
	m := map[string]string{metaConfig: string(cfg)}
	for k, v := range meta {
		if k != metaConfig {
			m[k] = v
		}
	}
	return e.Params.WriteSafetensors(w, m)
}

// LoadEncoder reads an encoder written by Save: it rebuilds the
// architecture from the stored configuration, then loads the weights. It
// returns the file's metadata.
func LoadEncoder[T nn.Float](r io.Reader) (*Encoder[T], map[string]string, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, fmt.Errorf("gnn: reading encoder: %w", err)
	}
	f, err := nn.DecodeSafetensors(b)
	if err != nil {
		return nil, nil, fmt.Errorf("gnn: reading encoder: %w", err)
	}
	raw, ok := f.Metadata[metaConfig]
	if !ok {
		return nil, nil, fmt.Errorf("gnn: reading encoder: metadata has no %q", metaConfig)
	}
	var cfg EncoderConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return nil, nil, fmt.Errorf("gnn: reading encoder: config: %w", err)
	}
	e, err := NewEncoder[T](cfg, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("gnn: reading encoder: %w", err)
	}
	meta, err := e.Params.ReadSafetensors(bytes.NewReader(b))
	if err != nil {
		return nil, nil, fmt.Errorf("gnn: reading encoder: %w", err)
	}
	return e, meta, nil
}
