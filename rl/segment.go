package rl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Segment is an actor's trajectory segment: Len steps of decisions with
// their behaviour log-probabilities, values, rewards and episode ends,
// plus the decision that followed the last step (Boot), whose value the
// learner bootstraps from unless the last step ended its episode. Finished
// episodes' results ride along for the learning curve.
type Segment struct {
	Steps    Samples   // Len decisions
	LogP     []float32 // behaviour log-probabilities
	Value    []float32 // behaviour value estimates
	Reward   []float32
	Done     []bool
	Boot     Samples // the next decision (empty when the last step is Done)
	Episodes []EpisodeResult
}

// EpisodeResult is one finished episode's outcome on an actor.
type EpisodeResult struct {
	Seed         uint64  `json:"seed"`
	Return       float64 `json:"return"`
	Steps        int     `json:"steps"`
	MeanSlowdown float64 `json:"mean_slowdown"`
	SLAViolation float64 `json:"sla_violation_rate"`
	Reward       float64 `json:"reward_mean"`
	Success      float64 `json:"reward_success"`
	Energy       float64 `json:"reward_energy"`
	Latency      float64 `json:"reward_latency"`
	Completed    int     `json:"jobs_completed"`
	Safety       int     `json:"safety_violations"`
}

// Len is the number of steps.
func (s *Segment) Len() int { return s.Steps.Len() }

// Reset empties the segment for K candidates, with graph rows or not,
// keeping memory.
func (s *Segment) Reset(K int, graph bool) {
	s.Steps.K, s.Boot.K = K, K
	s.Steps.WithGraph, s.Boot.WithGraph = graph, graph
	s.Steps.Reset()
	s.Boot.Reset()
	s.LogP, s.Value, s.Reward, s.Done = s.LogP[:0], s.Value[:0], s.Reward[:0], s.Done[:0]
	s.Episodes = s.Episodes[:0]
}

// segment wire format, little-endian:
//
//	magic "TGSG", format u16, K u16, steps u32, boot u8, episodes u16,
//	  graph u8 (1: samples carry graph rows)
//	per step and for the boot sample: valid u16, service u8, choice u16,
//	  replica u8, affinity f32, damping f32, ctx [CtxFeatures]f32,
//	  candidate rows [valid × CandFeatures]f32 (padding is not sent),
//	  with graph: graph rows [valid × GraphFeatures]f32
//	per step: logp f32, value f32, reward f32, done u8
//	per episode: seed u64, steps u32, completed u32, safety u32, 7 × f64
const (
	segMagic   = "TGSG"
	segFormat  = 2
	maxSegLen  = 1 << 16
	maxSegK    = 4096
	maxSegEpis = 1024
	// maxSegFloats bounds the decoded candidate and graph rows (padding
	// included: K rows per sample however few are sent), 256 MB.
	maxSegFloats = 64 << 20
)

// Errors of DecodeSegment.
var (
	ErrSegmentFormat    = errors.New("segment: bad format")
	ErrSegmentTruncated = errors.New("segment: truncated")
)

// AppendSegment appends s's wire bytes to dst.
func AppendSegment(dst []byte, s *Segment) []byte {
	le := binary.LittleEndian
	n := s.Len()
	dst = append(dst, segMagic...)
	dst = le.AppendUint16(dst, segFormat)
	dst = le.AppendUint16(dst, uint16(s.Steps.K))
	dst = le.AppendUint32(dst, uint32(n))
	dst = append(dst, byte(s.Boot.Len()))
	dst = le.AppendUint16(dst, uint16(len(s.Episodes)))
	g := byte(0)
	if s.Steps.WithGraph {
		g = 1
	}
	dst = append(dst, g)
	for i := 0; i < n; i++ {
		dst = appendSample(dst, &s.Steps, i)
	}
	for i := 0; i < s.Boot.Len(); i++ {
		dst = appendSample(dst, &s.Boot, i)
	}
	for i := 0; i < n; i++ {
		dst = appendF32(dst, s.LogP[i], s.Value[i], s.Reward[i])
		d := byte(0)
		if s.Done[i] {
			d = 1
		}
		dst = append(dst, d)
	}
	for _, e := range s.Episodes {
		dst = le.AppendUint64(dst, e.Seed)
		dst = le.AppendUint32(dst, uint32(e.Steps))
		dst = le.AppendUint32(dst, uint32(e.Completed))
		dst = le.AppendUint32(dst, uint32(e.Safety))
		for _, v := range [...]float64{e.Return, e.MeanSlowdown, e.SLAViolation, e.Reward, e.Success, e.Energy, e.Latency} {
			dst = le.AppendUint64(dst, math.Float64bits(v))
		}
	}
	return dst
}

func appendF32(dst []byte, vs ...float32) []byte {
	for _, v := range vs {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
	}
	return dst
}

func appendSample(dst []byte, s *Samples, i int) []byte {
	le := binary.LittleEndian
	v := int(s.Valid[i])
	dst = le.AppendUint16(dst, uint16(v))
	dst = append(dst, byte(s.Service[i]))
	dst = le.AppendUint16(dst, uint16(s.Choice[i]))
	dst = append(dst, byte(s.Replica[i]))
	dst = appendF32(dst, s.Aff[i], s.Damp[i])
	dst = appendF32(dst, s.Ctx[i*CtxFeatures:(i+1)*CtxFeatures]...)
	base := i * s.K * CandFeatures
	dst = appendF32(dst, s.Cand[base:base+v*CandFeatures]...)
	if s.WithGraph {
		dst = appendF32(dst, s.graphRows(i)[:v*GraphFeatures]...)
	}
	return dst
}

// reader decodes little-endian fields, remembering the first shortfall.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b)-r.off < n {
		r.err = fmt.Errorf("%w: need %d bytes at offset %d, have %d", ErrSegmentTruncated, n, r.off, len(r.b)-r.off)
		return nil
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}

func (r *reader) u8() uint8 {
	if p := r.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if p := r.take(2); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if p := r.take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if p := r.take(8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

func (r *reader) f32s(dst []float32) {
	p := r.take(4 * len(dst))
	if p == nil {
		return
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:]))
	}
}

// DecodeSegment parses a segment into s (reusing its memory) and validates
// it: shapes, action ranges, finite numbers. wantK, when > 0, is the
// candidate count of the learner's policy; wantGraph refuses a segment
// without the graph rows its encoder needs.
func DecodeSegment(b []byte, s *Segment, wantK int, wantGraph bool) error {
	r := &reader{b: b}
	if m := r.take(4); m == nil || string(m) != segMagic {
		return fmt.Errorf("%w: magic %q", ErrSegmentFormat, m)
	}
	if f := r.u16(); f != segFormat {
		return fmt.Errorf("%w: format %d, want %d", ErrSegmentFormat, f, segFormat)
	}
	K := int(r.u16())
	n := int(r.u32())
	boot := int(r.u8())
	neps := int(r.u16())
	graph := r.u8()
	if r.err != nil {
		return r.err
	}
	switch {
	case K < 1 || K > maxSegK || (wantK > 0 && K != wantK):
		return fmt.Errorf("%w: %d candidates (policy has %d)", ErrSegmentFormat, K, wantK)
	case n < 1 || n > maxSegLen:
		return fmt.Errorf("%w: %d steps", ErrSegmentFormat, n)
	case boot > 1 || neps > maxSegEpis:
		return fmt.Errorf("%w: %d boot samples, %d episodes", ErrSegmentFormat, boot, neps)
	case graph > 1:
		return fmt.Errorf("%w: graph flag %d", ErrSegmentFormat, graph)
	case wantGraph && graph == 0:
		return fmt.Errorf("%w: no graph rows, which the policy's encoder needs", ErrSegmentFormat)
	}
	width := CandFeatures
	if graph == 1 {
		width += GraphFeatures
	}
	if (n+boot)*K*width > maxSegFloats {
		return fmt.Errorf("%w: %d steps of %d candidates decode to more than %d MB", ErrSegmentFormat, n, K, maxSegFloats*4>>20)
	}
	// Every step needs at least its fixed fields: refuse absurd counts
	// before allocating for them.
	if min := n*(12+4*CtxFeatures+13) + boot*(12+4*CtxFeatures); len(b)-r.off < min {
		return fmt.Errorf("%w: %d steps need at least %d bytes, have %d", ErrSegmentTruncated, n, min, len(b)-r.off)
	}
	s.Reset(K, graph == 1)
	for i := 0; i < n; i++ {
		readSample(r, &s.Steps)
	}
	for i := 0; i < boot; i++ {
		readSample(r, &s.Boot)
	}
	if r.err != nil {
		return r.err
	}
	s.LogP, s.Value, s.Reward = resize(s.LogP, n), resize(s.Value, n), resize(s.Reward, n)
	s.Done = resize(s.Done, n)
	var three [3]float32
	for i := 0; i < n; i++ {
		r.f32s(three[:])
		s.LogP[i], s.Value[i], s.Reward[i] = three[0], three[1], three[2]
		d := r.u8()
		if d > 1 {
			return fmt.Errorf("%w: step %d done flag %d", ErrSegmentFormat, i, d)
		}
		s.Done[i] = d == 1
	}
	for i := 0; i < neps; i++ {
		var e EpisodeResult
		e.Seed = r.u64()
		e.Steps, e.Completed, e.Safety = int(r.u32()), int(r.u32()), int(r.u32())
		for _, p := range [...]*float64{&e.Return, &e.MeanSlowdown, &e.SLAViolation, &e.Reward, &e.Success, &e.Energy, &e.Latency} {
			*p = math.Float64frombits(r.u64())
			if math.IsNaN(*p) || math.IsInf(*p, 0) {
				return fmt.Errorf("%w: episode %d has a non-finite result", ErrSegmentFormat, i)
			}
		}
		s.Episodes = append(s.Episodes, e)
	}
	if r.err != nil {
		return r.err
	}
	if r.off != len(b) {
		return fmt.Errorf("%w: %d trailing bytes", ErrSegmentFormat, len(b)-r.off)
	}
	if !s.Done[n-1] && boot == 0 {
		return fmt.Errorf("%w: the last step does not end an episode and there is no bootstrap sample", ErrSegmentFormat)
	}
	for i := 0; i < n; i++ {
		// (A joint log-probability can be positive: the Beta heads are
		// densities, above 1 where they are peaked.)
		if !finite32(s.LogP[i]) || !finite32(s.Value[i]) || !finite32(s.Reward[i]) {
			return fmt.Errorf("%w: step %d: log-prob %v, value %v, reward %v", ErrSegmentFormat, i, s.LogP[i], s.Value[i], s.Reward[i])
		}
	}
	if err := s.Steps.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrSegmentFormat, err)
	}
	if err := s.Boot.Validate(); err != nil {
		return fmt.Errorf("%w: boot %v", ErrSegmentFormat, err)
	}
	return nil
}

func readSample(r *reader, s *Samples) {
	v := int(r.u16())
	svc := r.u8()
	choice := int(r.u16())
	rep := int(r.u8())
	var ad [2]float32
	r.f32s(ad[:])
	if r.err != nil {
		return
	}
	if v < 1 || v > s.K {
		r.err = fmt.Errorf("%w: %d valid candidates, K %d", ErrSegmentFormat, v, s.K)
		return
	}
	need := CtxFeatures + v*CandFeatures
	if s.WithGraph {
		need += v * GraphFeatures
	}
	if len(r.b)-r.off < 4*need {
		r.take(4 * need) // records the truncation
		return
	}
	cand, nodes, ctx := s.grow()
	r.f32s(ctx)
	r.f32s(cand[:v*CandFeatures])
	if s.WithGraph {
		r.f32s(s.graphRows(s.Len() - 1)[:v*GraphFeatures])
	}
	_ = nodes // machine ids are the actor's business
	j := s.Len() - 1
	s.Valid[j], s.Service[j] = int32(v), float32(svc)
	s.SetAction(j, choice, rep, ad[0], ad[1])
}
