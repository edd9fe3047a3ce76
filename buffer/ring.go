package buffer

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
)

// ErrEmptyBuffer is returned when sampling a buffer that holds no item
// (or, for Prioritized, no item with a positive priority).
var ErrEmptyBuffer = errors.New("buffer: buffer is empty")

// Ring is a bounded FIFO buffer with batch eviction, safe for concurrent use.
// When an item arrives at a full ring, its oldest ceil(EvictRatio·MaxSize)
// items are dropped at once, then the item is stored.
//
// Items are numbered by age: Get(0) is the oldest item still held.
type Ring[T any] struct {
	mu    sync.Mutex
	buf   []T // circular storage, len == cap == MaxSize once grown
	head  int // slot of the oldest item
	n     int // items held
	max   int
	evict int // items dropped when full

	added, evicted uint64
}

// NewRing returns an empty ring, or an error when cfg is invalid.
func NewRing[T any](cfg RingConfig) (*Ring[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("replay.NewRing: %w", err)
	}
	// Storage grows with the items (up to MaxSize) so that a large ring that
	// is never filled does not hold its whole capacity.
	return &Ring[T]{buf: make([]T, 0, min(cfg.MaxSize, 1024)), max: cfg.MaxSize, evict: cfg.evictCount()}, nil
}

// Add stores item, first evicting the oldest items when the ring is full.
// It returns the number of items evicted by this call (0 or the eviction
// batch).
func (r *Ring[T]) Add(item T) (evicted int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) < r.max {
		// Still growing: the ring has never wrapped, head is 0.
		r.buf = append(r.buf, item)
		r.n++
		r.added++
		return 0
	}
	if r.n == r.max {
		r.dropOldest(r.evict)
		evicted = r.evict
	}
	r.buf[(r.head+r.n)%r.max] = item
	r.n++
	r.added++
	return evicted
}

// dropOldest removes the k oldest items; the caller holds r.mu.
func (r *Ring[T]) dropOldest(k int) {
	// Zero the slots so that items holding pointers can be collected.
	end := r.head + k
	if end <= r.max {
		clear(r.buf[r.head:end])
	} else {
		clear(r.buf[r.head:])
		clear(r.buf[:end-r.max])
	}
	r.head = end % r.max
	r.n -= k
	r.evicted += uint64(k)
}

// Len returns the number of items held.
func (r *Ring[T]) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Cap returns MaxSize.
func (r *Ring[T]) Cap() int { return r.max }

// Counts returns the number of items ever added and ever evicted.
func (r *Ring[T]) Counts() (added, evicted uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.added, r.evicted
}

// Get returns the i-th oldest item held (0 is the oldest) and true, or the
// zero T and false when i is outside [0, Len()).
func (r *Ring[T]) Get(i int) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i < 0 || i >= r.n {
		var zero T
		return zero, false
	}
	return r.buf[r.slot(i)], true
}

// slot maps an age index to a storage slot; the caller holds r.mu.
func (r *Ring[T]) slot(i int) int {
	s := r.head + i
	if s >= r.max {
		s -= r.max
	}
	return s
}

// Sample appends n items drawn uniformly with replacement to dst and returns
// the extended slice. It allocates nothing when dst has room for n more
// items. It returns ErrEmptyBuffer when the ring is empty and an error when
// n is negative; dst is returned unchanged with the error.
func (r *Ring[T]) Sample(rng *rand.Rand, n int, dst []T) ([]T, error) {
	if n < 0 {
		return dst, fmt.Errorf("buffer: Ring.Sample: n = %d: must be >= 0", n)
	}
	dst = slices.Grow(dst, n)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 {
		return dst, fmt.Errorf("buffer: Ring.Sample of %d items: %w", n, ErrEmptyBuffer)
	}
	for range n {
		dst = append(dst, r.buf[r.slot(rng.IntN(r.n))])
	}
	return dst, nil
}

// Snapshot appends every item held, oldest first, to dst and returns the
// extended slice.
func (r *Ring[T]) Snapshot(dst []T) []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	dst = slices.Grow(dst, r.n)
	first := min(r.n, r.max-r.head)
	dst = append(dst, r.buf[r.head:r.head+first]...)
	return append(dst, r.buf[:r.n-first]...)
}

// Range calls fn for each item held, oldest first, with its age index,
// until fn returns false. The ring is locked during the walk: fn must not
// call methods of r, and writers wait until Range returns. Use Snapshot to
// work on a copy instead.
func (r *Ring[T]) Range(fn func(i int, item T) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.n {
		if !fn(i, r.buf[r.slot(i)]) {
			return
		}
	}
}

// Reset removes every item; counts are kept.
func (r *Ring[T]) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.buf)
	r.buf = r.buf[:0]
	r.head, r.n = 0, 0
}
