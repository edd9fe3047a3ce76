package rl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The wire form of a round PPO rollout, as actors send it to the learner
// in transport segments. A rollout is cut into chunks of at most
// roundChunkBytes so that each fits a NATS message; the first chunk also
// carries the run's outcome and its allocations' (time, active jobs). All
// integers are little-endian.
//
//	"RPPO" version(1) rollout(u32) chunk(u32) chunks(u32)
//	chunk 0: sim_s(f64) avg_jct_h(f64) saturated(u8) calls(u32) {t(f64) jobs(u32)}...
//	points(u32) {t(f64) dim(u16) pairs(u32) x(f64 pairs·dim) job(i32 pairs)
//	             typ(i32 pairs) scale(i32 pairs) types(u16) cap(i32 types)
//	             choices(u32) seq(i32 choices) logp(f64 choices)}...

const (
	roundWireMagic   = "RPPO"
	roundWireVersion = 1
	// roundChunkBytes bounds a chunk's points (a point larger than it
	// travels alone).
	roundChunkBytes = 2 << 20
	// Bounds a decoder enforces on what it is sent: no allocation in the
	// learner grows past what a real rollout needs.
	roundWireMaxCalls   = 1 << 22
	roundWireMaxPairs   = 1 << 20
	roundWireMaxTypes   = 1 << 10
	roundWireMaxChunks  = 1 << 16
	roundWireMaxChoices = roundWireMaxPairs + 1
)

// roundRollout is one sampled run: what an actor computes and the learner
// learns from.
type roundRollout struct {
	index     int // rollout number within the iteration
	simS      float64
	avgJCT    float64 // hours; NaN when saturated
	saturated bool
	calls     []roundCall
	points    []roundPoint
}

// encodeRoundRollout cuts r into chunks whose points take at most limit
// bytes (a larger point travels alone).
func encodeRoundRollout(r *roundRollout, limit int) [][]byte {
	var out [][]byte
	at := 0
	for c := 0; c == 0 || at < len(r.points); c++ {
		b := make([]byte, 0, 64)
		b = append(b, roundWireMagic...)
		b = append(b, roundWireVersion)
		b = binary.LittleEndian.AppendUint32(b, uint32(r.index))
		b = binary.LittleEndian.AppendUint32(b, uint32(c))
		b = binary.LittleEndian.AppendUint32(b, 0) // chunks: patched below
		if c == 0 {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.simS))
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.avgJCT))
			b = append(b, b2u8(r.saturated))
			b = binary.LittleEndian.AppendUint32(b, uint32(len(r.calls)))
			for _, k := range r.calls {
				b = binary.LittleEndian.AppendUint64(b, math.Float64bits(k.t))
				b = binary.LittleEndian.AppendUint32(b, uint32(k.jobs))
			}
		}
		n := 0
		size := 0
		for at+n < len(r.points) && (n == 0 || size+pointBytes(&r.points[at+n]) <= limit) {
			size += pointBytes(&r.points[at+n])
			n++
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(n))
		for _, p := range r.points[at : at+n] {
			b = appendPoint(b, &p)
		}
		at += n
		out = append(out, b)
	}
	for _, b := range out {
		binary.LittleEndian.PutUint32(b[13:], uint32(len(out)))
	}
	return out
}

func b2u8(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// pointBytes is the wire size of p.
func pointBytes(p *roundPoint) int {
	return 8 + 2 + 4 + 8*len(p.x) + 12*len(p.job) + 2 + 4*len(p.cap) + 4 + 12*len(p.seq)
}

func appendPoint(b []byte, p *roundPoint) []byte {
	le := binary.LittleEndian
	b = le.AppendUint64(b, math.Float64bits(p.t))
	b = le.AppendUint16(b, uint16(p.dim))
	b = le.AppendUint32(b, uint32(len(p.job)))
	for _, v := range p.x {
		b = le.AppendUint64(b, math.Float64bits(v))
	}
	for _, s := range [][]int32{p.job, p.typ, p.scale} {
		for _, v := range s {
			b = le.AppendUint32(b, uint32(v))
		}
	}
	b = le.AppendUint16(b, uint16(len(p.cap)))
	for _, v := range p.cap {
		b = le.AppendUint32(b, uint32(v))
	}
	b = le.AppendUint32(b, uint32(len(p.seq)))
	for _, v := range p.seq {
		b = le.AppendUint32(b, uint32(v))
	}
	for _, v := range p.logp {
		b = le.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

// roundChunk is one decoded chunk.
type roundChunk struct {
	rollout, chunk, chunks int
	head                   *roundRollout // chunk 0's outcome and calls
	points                 []roundPoint
}

var errRoundWire = errors.New("round rollout chunk")

// wireReader reads little-endian fields and remembers the first error.
type wireReader struct {
	b   []byte
	err error
}

func (r *wireReader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		if r.err == nil {
			r.err = fmt.Errorf("%w: truncated", errRoundWire)
		}
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}
func (r *wireReader) u8() byte {
	if v := r.take(1); v != nil {
		return v[0]
	}
	return 0
}
func (r *wireReader) u16() int {
	if v := r.take(2); v != nil {
		return int(binary.LittleEndian.Uint16(v))
	}
	return 0
}
func (r *wireReader) u32() int {
	if v := r.take(4); v != nil {
		return int(binary.LittleEndian.Uint32(v))
	}
	return 0
}
func (r *wireReader) f64() float64 {
	if v := r.take(8); v != nil {
		return math.Float64frombits(binary.LittleEndian.Uint64(v))
	}
	return 0
}

// count reads a length and checks it against a bound and against the
// bytes left (each element at least per bytes), so that garbage cannot
// make the decoder allocate.
func (r *wireReader) count(bound, per int, what string) int {
	n := r.u32()
	if r.err == nil && (n > bound || n*per > len(r.b)) {
		r.err = fmt.Errorf("%w: %d %s", errRoundWire, n, what)
		return 0
	}
	return n
}

// decodeRoundChunk parses and checks one chunk: lengths within bounds,
// features and log-probabilities finite, every index in range, so that
// the learner can replay its choices without further checks.
func decodeRoundChunk(b []byte, dim int) (roundChunk, error) {
	r := &wireReader{b: b}
	if string(r.take(4)) != roundWireMagic || r.u8() != roundWireVersion {
		return roundChunk{}, fmt.Errorf("%w: bad magic or version", errRoundWire)
	}
	c := roundChunk{rollout: r.u32(), chunk: r.u32(), chunks: r.u32()}
	if r.err == nil && (c.chunks < 1 || c.chunks > roundWireMaxChunks || c.chunk >= c.chunks) {
		return c, fmt.Errorf("%w: chunk %d of %d", errRoundWire, c.chunk, c.chunks)
	}
	if c.chunk == 0 {
		h := &roundRollout{index: c.rollout, simS: r.f64(), avgJCT: r.f64()}
		sat := r.u8()
		h.saturated = sat == 1
		n := r.count(roundWireMaxCalls, 12, "allocations")
		h.calls = make([]roundCall, n)
		for i := range h.calls {
			h.calls[i] = roundCall{t: r.f64(), jobs: r.u32()}
			if r.err == nil && !(h.calls[i].t >= 0 && h.calls[i].t < math.MaxFloat64) {
				r.err = fmt.Errorf("%w: allocation time %v", errRoundWire, h.calls[i].t)
			}
		}
		if r.err == nil && (sat > 1 || !(h.simS >= 0 && h.simS < math.MaxFloat64) || (!h.saturated && !(h.avgJCT >= 0 && h.avgJCT < math.MaxFloat64))) {
			r.err = fmt.Errorf("%w: outcome %v s, %v h, saturated %d", errRoundWire, h.simS, h.avgJCT, sat)
		}
		c.head = h
	}
	np := r.count(roundChunkBytes, 20, "points")
	for range np {
		if r.err != nil {
			break
		}
		c.points = append(c.points, r.point(dim))
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: %d trailing bytes", errRoundWire, len(r.b))
	}
	return c, r.err
}

func (r *wireReader) point(dim int) roundPoint {
	p := roundPoint{t: r.f64(), dim: r.u16()}
	if r.err == nil && (p.dim != dim || !(p.t >= 0 && p.t < math.MaxFloat64)) {
		r.err = fmt.Errorf("%w: point at %v s with %d features, want %d", errRoundWire, p.t, p.dim, dim)
		return p
	}
	n := r.count(roundWireMaxPairs, 8*dim+12, "pairs")
	p.x = make([]float64, n*dim)
	for i := range p.x {
		if p.x[i] = r.f64(); r.err == nil && (math.IsNaN(p.x[i]) || math.IsInf(p.x[i], 0)) {
			r.err = fmt.Errorf("%w: feature %v", errRoundWire, p.x[i])
		}
	}
	p.job, p.typ, p.scale = r.i32s(n), r.i32s(n), r.i32s(n)
	nt := r.u16()
	if r.err == nil && nt > roundWireMaxTypes {
		r.err = fmt.Errorf("%w: %d GPU types", errRoundWire, nt)
	}
	p.cap = r.i32s(nt)
	for i := range n {
		if r.err == nil && (p.job[i] < 0 || int(p.job[i]) >= n || p.typ[i] < 0 || int(p.typ[i]) >= nt || p.scale[i] < 1) {
			r.err = fmt.Errorf("%w: pair %d (job %d, type %d, scale %d) out of range", errRoundWire, i, p.job[i], p.typ[i], p.scale[i])
		}
	}
	for _, v := range p.cap {
		if r.err == nil && v < 0 {
			r.err = fmt.Errorf("%w: capacity %d", errRoundWire, v)
		}
	}
	k := r.count(roundWireMaxChoices, 12, "choices")
	p.seq = r.i32s(k)
	p.logp = make([]float64, k)
	for i := range p.logp {
		p.logp[i] = r.f64()
		if r.err == nil && (p.seq[i] < -1 || int(p.seq[i]) >= n || (p.seq[i] == -1 && i != k-1) || !(p.logp[i] <= 0) || math.IsInf(p.logp[i], 0)) {
			r.err = fmt.Errorf("%w: choice %d (%d, log-probability %v)", errRoundWire, i, p.seq[i], p.logp[i])
		}
	}
	if r.err == nil {
		// Every choice must have been allocatable when it was made.
		free := make([]int32, nt)
		copy(free, p.cap)
		done := make([]bool, n)
		for i, a := range p.seq {
			if a < 0 {
				break
			}
			if done[p.job[a]] || free[p.typ[a]] < p.scale[a] {
				r.err = fmt.Errorf("%w: choice %d (pair %d) was not allocatable", errRoundWire, i, a)
				break
			}
			done[p.job[a]] = true
			free[p.typ[a]] -= p.scale[a]
		}
	}
	return p
}

func (r *wireReader) i32s(n int) []int32 {
	if r.err != nil || n*4 > len(r.b) {
		if r.err == nil {
			r.err = fmt.Errorf("%w: truncated", errRoundWire)
		}
		return nil
	}
	v := make([]int32, n)
	for i := range v {
		v[i] = int32(r.u32())
	}
	return v
}
