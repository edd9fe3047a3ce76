package buffer

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// Errors of UpdatePriorities, wrapped with the offending position and value.
var (
	// ErrIndexOutOfRange: an index that Add never returned.
	ErrIndexOutOfRange = errors.New("index out of range")
	// ErrInvalidPriority: a NaN, negative, infinite or too large priority.
	ErrInvalidPriority = errors.New("invalid priority")
)

// Batch receives a sample of a Prioritized buffer. Its slices are owned by
// the caller and reused across calls: Sample sets them to length n and
// allocates only when their capacity is below n.
type Batch[T any] struct {
	// Items are the sampled items (copies), Items[k] drawn in segment k.
	Items []T
	// Indices are the items' indices as returned by Add; pass them with
	// new priorities to UpdatePriorities.
	Indices []int
	// Weights are the importance weights (N·P(i))^-β / max_j (N·P(j))^-β,
	// in (0, 1]: multiply each item's loss by its weight. float32 because
	// they scale float32 losses.
	Weights []float32
	// Beta is the β the weights were computed with.
	Beta float64

	ratio []float64 // p_i / p_min, kept between the locked and the unlocked part
}

// NewBatch returns a Batch with room for n items.
func NewBatch[T any](n int) *Batch[T] {
	return &Batch[T]{
		Items:   make([]T, 0, n),
		Indices: make([]int, 0, n),
		Weights: make([]float32, 0, n),
		ratio:   make([]float64, 0, n),
	}
}

// Prioritized is a proportional prioritized experience replay buffer
// (Schaul et al. 2016), safe for concurrent use by many writers and a
// sampling learner.
//
// Every item gets an index from Add: 0, 1, 2, ... in insertion order,
// never reused. Once Capacity items are held, each Add overwrites the
// oldest item, and updates for the indices of overwritten items are
// ignored (see UpdatePriorities), so that a learner's late update never
// lands on the newer item that took the slot.
type Prioritized[T any] struct {
	cfg      PrioritizedConfig
	rawLimit float64 // largest p+ε accepted, so that tree sums stay finite

	mu      sync.Mutex
	items   []T // slot storage; grows to Capacity, then slot = index % Capacity
	tree    *sumTree
	next    int     // indices issued so far
	maxRaw  float64 // largest p+ε seen (InitialMaxPriority+ε at first)
	maxLeaf float64 // maxRaw^α: the sampling mass of a new item
	step    int     // Sample calls so far (drives β)
	stale   uint64  // updates ignored because their item was overwritten
}

// NewPrioritized returns an empty buffer, or an error when cfg is invalid.
func NewPrioritized[T any](cfg PrioritizedConfig) (*Prioritized[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("replay.NewPrioritized: %w", err)
	}
	raw := cfg.InitialMaxPriority + cfg.Epsilon
	return &Prioritized[T]{
		cfg:      cfg,
		rawLimit: cfg.maxRawPriority(),
		items:    make([]T, 0, min(cfg.Capacity, 1024)),
		tree:     newSumTree(cfg.Capacity),
		maxRaw:   raw,
		maxLeaf:  math.Pow(raw, cfg.Alpha),
	}, nil
}

// Config returns the configuration the buffer was built with.
func (p *Prioritized[T]) Config() PrioritizedConfig { return p.cfg }

// Add stores item with the largest priority seen so far, overwriting the
// oldest item when the buffer is full, and returns its index. O(log n).
func (p *Prioritized[T]) Add(item T) (idx int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	idx = p.next
	slot := idx % p.cfg.Capacity
	if slot == len(p.items) {
		p.items = append(p.items, item)
	} else {
		p.items[slot] = item
	}
	p.tree.set(slot, p.maxLeaf)
	p.next++
	return idx
}

// Len returns the number of items held.
func (p *Prioritized[T]) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return min(p.next, p.cfg.Capacity)
}

// Cap returns the capacity.
func (p *Prioritized[T]) Cap() int { return p.cfg.Capacity }

// Added returns the number of items ever added, which is also the next
// index Add will return.
func (p *Prioritized[T]) Added() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next
}

// StaleUpdates returns how many priority updates were ignored because their
// item had been overwritten.
func (p *Prioritized[T]) StaleUpdates() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stale
}

// slotOf returns the slot of index idx when the item is still held; the
// caller holds p.mu.
func (p *Prioritized[T]) slotOf(idx int) (int, bool) {
	if idx < 0 || idx >= p.next || idx < p.next-p.cfg.Capacity {
		return 0, false
	}
	return idx % p.cfg.Capacity, true
}

// Get returns the item of index idx and true, or the zero T and false when
// idx was never returned by Add or its item has been overwritten.
func (p *Prioritized[T]) Get(idx int) (T, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.slotOf(idx)
	if !ok {
		var zero T
		return zero, false
	}
	return p.items[s], true
}

// Priority returns the sampling mass (p+ε)^α of index idx and true, or 0
// and false when the item is not held.
func (p *Prioritized[T]) Priority(idx int) (float64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.slotOf(idx)
	if !ok {
		return 0, false
	}
	return p.tree.leaf(s), true
}

// TotalPriority returns Σ (p_i+ε)^α over the items held.
func (p *Prioritized[T]) TotalPriority() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tree.total()
}

// Step returns the number of Sample calls so far, the step of β's schedule.
func (p *Prioritized[T]) Step() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.step
}

// SetStep sets the step of β's schedule, e.g. when a learner resumes from
// a checkpoint. Negative steps count as 0.
func (p *Prioritized[T]) SetStep(step int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.step = max(step, 0)
}

// Beta returns the β the next Sample call will use.
func (p *Prioritized[T]) Beta() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cfg.AnnealedBeta(p.step)
}

// Sample draws n items by stratified proportional sampling into out: the
// total mass is split into n equal segments and one item is drawn from
// each, item i with probability (p_i+ε)^α / Σ_k (p_k+ε)^α overall. Items
// are drawn with replacement (an item heavier than a segment can appear
// more than once). Each call advances β's schedule by one step. Sample
// draws exactly n values from rng (even when the buffer turns out empty)
// and allocates nothing when out's slices have capacity n. O(n log N).
//
// It returns ErrEmptyBuffer when no item has a positive priority, and an
// error when n < 1 or out is nil; out is left unchanged with an error.
func (p *Prioritized[T]) Sample(rng *rand.Rand, n int, out *Batch[T]) error {
	if n < 1 {
		return fmt.Errorf("buffer: Prioritized.Sample: n = %d: must be positive", n)
	}
	if out == nil {
		return errors.New("buffer: Prioritized.Sample: nil *Batch")
	}
	items := slices.Grow(out.Items[:0], n)[:n]
	indices := slices.Grow(out.Indices[:0], n)[:n]
	weights := slices.Grow(out.Weights[:0], n)[:n]
	ratio := slices.Grow(out.ratio[:0], n)[:n]
	// The random positions inside the segments are drawn before locking;
	// ratio holds them until sampleLocked replaces them.
	for k := range ratio {
		ratio[k] = rng.Float64()
	}

	beta, err := p.sampleLocked(items, indices, ratio)
	if err != nil {
		return err
	}
	// The powers are the costly part of the weights; they need no lock.
	// w_i / max_j w_j = (N·P(i))^-β / (N·P_min)^-β = (p_i/p_min)^-β.
	switch beta {
	case 1: // the end of the annealing, where most of training runs
		for k, r := range ratio {
			weights[k] = float32(1 / r)
		}
	default:
		for k, r := range ratio {
			weights[k] = float32(math.Pow(r, -beta))
		}
	}
	out.Items, out.Indices, out.Weights, out.ratio, out.Beta = items, indices, weights, ratio, beta
	return nil
}

// sampleLocked takes in ratio[k] the position in [0, 1) of draw k inside
// segment k, fills items, indices and ratio (now p_i/p_min) under the lock,
// and returns the β of this step.
func (p *Prioritized[T]) sampleLocked(items []T, indices []int, ratio []float64) (float64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	size := min(p.next, p.cfg.Capacity)
	total := p.tree.total()
	if size == 0 {
		return 0, fmt.Errorf("buffer: Prioritized.Sample of %d items: %w", len(items), ErrEmptyBuffer)
	}
	if !(total > 0) {
		return 0, fmt.Errorf("buffer: Prioritized.Sample of %d items: all %d priorities are zero: %w", len(items), size, ErrEmptyBuffer)
	}
	pmin := p.tree.minPositive()
	seg := total / float64(len(items))
	// Index of the item in slot s: the oldest held index is base, in slot
	// base % Capacity; later ones follow slot by slot, wrapping around.
	base := p.next - size
	baseSlot := base % p.cfg.Capacity
	var us [lanes]float64
	var slots [lanes]int
	for k0 := 0; k0 < len(items); k0 += lanes {
		m := min(lanes, len(items)-k0)
		for L := range m {
			us[L] = (float64(k0+L) + ratio[k0+L]) * seg
		}
		p.tree.findLanes(us[:m], slots[:m])
		for L, s := range slots[:m] {
			k := k0 + L
			items[k] = p.items[s]
			off := s - baseSlot
			if off < 0 {
				off += p.cfg.Capacity
			}
			indices[k] = base + off
			ratio[k] = p.tree.leaf(s) / pmin
		}
	}
	beta := p.cfg.AnnealedBeta(p.step)
	if p.step < math.MaxInt {
		p.step++
	}
	return beta, nil
}

// UpdatePriorities sets the priority of item idx[k] to prio[k] (typically
// its latest |TD error|); the item is then drawn in proportion to
// (prio[k]+ε)^α. O(len(idx)·log N).
//
// The whole call is refused, changing nothing, when the lengths differ,
// when an index was never returned by Add (ErrIndexOutOfRange), or when a
// priority is NaN, negative, infinite or so large that the tree's sums
// could overflow (ErrInvalidPriority). Indices whose items have since been
// overwritten are skipped without error (counted by StaleUpdates): with
// concurrent writers a learner's update can arrive after the item left.
// When an index appears twice, the later priority wins.
func (p *Prioritized[T]) UpdatePriorities(idx []int, prio []float64) error {
	if len(idx) != len(prio) {
		return fmt.Errorf("buffer: Prioritized.UpdatePriorities: %d indices but %d priorities", len(idx), len(prio))
	}
	for k, v := range prio {
		if !(v >= 0) || !(v+p.cfg.Epsilon <= p.rawLimit) {
			return fmt.Errorf("buffer: Prioritized.UpdatePriorities: prio[%d] = %v (idx %d): %w: must be finite, >= 0 and at most %g",
				k, v, idx[k], ErrInvalidPriority, p.rawLimit-p.cfg.Epsilon)
		}
	}
	// Indices only ever grow, so one that Add has returned stays valid:
	// checking them against one reading of next refuses the whole call
	// before anything changes, and the work can then be split.
	added := p.Added()
	for k, i := range idx {
		if i < 0 || i >= added {
			return fmt.Errorf("buffer: Prioritized.UpdatePriorities: idx[%d] = %d: %w: Add has returned [0, %d)",
				k, i, ErrIndexOutOfRange, added)
		}
	}
	// Chunks: the powers are computed without the lock, and writers get
	// the lock between chunks instead of waiting for a whole batch.
	const chunk = 32
	var raw, leaf [chunk]float64
	for k0 := 0; k0 < len(idx); k0 += chunk {
		m := min(chunk, len(idx)-k0)
		for k := range m {
			raw[k] = prio[k0+k] + p.cfg.Epsilon
			leaf[k] = math.Pow(raw[k], p.cfg.Alpha)
		}
		p.applyLocked(idx[k0:k0+m], raw[:m], leaf[:m])
	}
	return nil
}

// applyLocked sets the masses of the items still held among idx, under the
// lock.
func (p *Prioritized[T]) applyLocked(idx []int, raw, leaf []float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, i := range idx {
		s, ok := p.slotOf(i)
		if !ok {
			p.stale++
			continue
		}
		if raw[k] > p.maxRaw {
			p.maxRaw, p.maxLeaf = raw[k], leaf[k]
		}
		p.tree.set(s, leaf[k])
	}
}

// maxRawPriority is the largest p+ε whose mass (p+ε)^α leaves a sum over
// every leaf of the tree finite, with a factor 2 of headroom for rounding.
func (c PrioritizedConfig) maxRawPriority() float64 {
	if c.Alpha == 0 {
		return math.MaxFloat64
	}
	return min(math.Pow(maxLeaf(c.Capacity)/2, 1/c.Alpha), math.MaxFloat64)
}
