package buffer

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

func newTestRing(t *testing.T, size int, ratio float64) *Ring[int] {
	t.Helper()
	r, err := NewRing[int](RingConfig{MaxSize: size, EvictRatio: ratio})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func seq(from, to int) []int { // [from, to]
	var s []int
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

func TestRingEvictionOrderAndCounts(t *testing.T) {
	r := newTestRing(t, 10, 0.2) // evicts 2 at once
	for i := 1; i <= 10; i++ {
		if ev := r.Add(i); ev != 0 {
			t.Fatalf("Add(%d) evicted %d before the ring was full", i, ev)
		}
	}
	if got := r.Snapshot(nil); !slices.Equal(got, seq(1, 10)) {
		t.Fatalf("full ring = %v", got)
	}
	steps := []struct {
		add     int
		evicted int
		want    []int
	}{
		{11, 2, seq(3, 11)},  // 1 and 2 leave at once
		{12, 0, seq(3, 12)},  // room left by the batch
		{13, 2, seq(5, 13)},  // 3 and 4 leave
		{14, 0, seq(5, 14)},  //
		{15, 2, seq(7, 15)},  // wraps around the storage
		{16, 0, seq(7, 16)},  //
		{17, 2, seq(9, 17)},  //
		{18, 0, seq(9, 18)},  //
		{19, 2, seq(11, 19)}, // head back at slot 0
		{20, 0, seq(11, 20)},
		{21, 2, seq(13, 21)},
	}
	for _, s := range steps {
		if ev := r.Add(s.add); ev != s.evicted {
			t.Fatalf("Add(%d) evicted %d, want %d", s.add, ev, s.evicted)
		}
		if got := r.Snapshot(nil); !slices.Equal(got, s.want) {
			t.Fatalf("after Add(%d): %v, want %v", s.add, got, s.want)
		}
		if r.Len() != len(s.want) {
			t.Fatalf("after Add(%d): Len %d, want %d", s.add, r.Len(), len(s.want))
		}
		for i, w := range s.want {
			if got, ok := r.Get(i); !ok || got != w {
				t.Fatalf("after Add(%d): Get(%d) = %d, %v; want %d", s.add, i, got, ok, w)
			}
		}
	}
	if added, evicted := r.Counts(); added != 21 || evicted != 12 {
		t.Fatalf("Counts = %d, %d; want 21, 12", added, evicted)
	}
}

func TestRingDefaults(t *testing.T) {
	r, err := NewRing[int](DefaultRingConfig())
	if err != nil {
		t.Fatal(err)
	}
	if r.Cap() != 10_000 {
		t.Fatalf("Cap = %d", r.Cap())
	}
	for i := range 10_000 {
		r.Add(i)
	}
	if ev := r.Add(10_000); ev != 2000 {
		t.Fatalf("evicted %d, want 2000", ev)
	}
	if r.Len() != 8001 {
		t.Fatalf("Len = %d, want 8001", r.Len())
	}
	if first, _ := r.Get(0); first != 2000 {
		t.Fatalf("oldest = %d, want 2000", first)
	}
	if last, _ := r.Get(8000); last != 10_000 {
		t.Fatalf("newest = %d, want 10000", last)
	}
	for i := 10_001; i < 12_000; i++ {
		if ev := r.Add(i); ev != 0 {
			t.Fatalf("Add(%d) evicted %d", i, ev)
		}
	}
	if r.Len() != 10_000 {
		t.Fatalf("Len = %d, want 10000", r.Len())
	}
	if ev := r.Add(12_000); ev != 2000 || r.Len() != 8001 {
		t.Fatalf("second eviction: %d items, Len %d", ev, r.Len())
	}
	if first, _ := r.Get(0); first != 4000 {
		t.Fatalf("oldest = %d, want 4000", first)
	}
}

func TestRingEvictCount(t *testing.T) {
	for _, c := range []struct {
		size  int
		ratio float64
		want  int
	}{
		{10_000, 0.2, 2000},
		{10, 0.3, 3}, // 0.3·10 is 3.0000000000000004 in float64
		{10, 0.7, 7},
		{3, 0.5, 2}, // ceil(1.5)
		{10, 0.01, 1},
		{10, 1, 10},
		{1, 0.2, 1},
		{7, 1e-9, 1},
	} {
		if got := (RingConfig{MaxSize: c.size, EvictRatio: c.ratio}).evictCount(); got != c.want {
			t.Errorf("evictCount(size %d, ratio %v) = %d, want %d", c.size, c.ratio, got, c.want)
		}
	}
	r := newTestRing(t, 4, 1)
	for i := range 5 {
		r.Add(i)
	}
	if got := r.Snapshot(nil); !slices.Equal(got, []int{4}) {
		t.Fatalf("ratio 1: %v, want [4]", got)
	}
}

func TestRingConfigValidation(t *testing.T) {
	for _, c := range []struct {
		cfg   RingConfig
		field string
	}{
		{RingConfig{MaxSize: 0, EvictRatio: 0.2}, "MaxSize"},
		{RingConfig{MaxSize: -5, EvictRatio: 0.2}, "MaxSize"},
		{RingConfig{MaxSize: maxCapacity + 1, EvictRatio: 0.2}, "MaxSize"},
		{RingConfig{MaxSize: 10, EvictRatio: 0}, "EvictRatio"},
		{RingConfig{MaxSize: 10, EvictRatio: -0.1}, "EvictRatio"},
		{RingConfig{MaxSize: 10, EvictRatio: 1.5}, "EvictRatio"},
		{RingConfig{MaxSize: 10, EvictRatio: nan()}, "EvictRatio"},
	} {
		_, err := NewRing[int](c.cfg)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "RingConfig."+c.field) {
			t.Errorf("NewRing(%+v) = %v; want ErrInvalidConfig naming %s", c.cfg, err, c.field)
		}
	}
	if err := DefaultRingConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestRingGetRangeReset(t *testing.T) {
	r := newTestRing(t, 5, 0.4)
	if _, ok := r.Get(0); ok {
		t.Fatal("Get(0) of an empty ring succeeded")
	}
	for i := range 7 { // 0..4, then 5 evicts 0,1; 6 fills
		r.Add(i)
	}
	for _, i := range []int{-1, 5, 100} {
		if v, ok := r.Get(i); ok || v != 0 {
			t.Fatalf("Get(%d) = %d, %v", i, v, ok)
		}
	}
	var seen []int
	r.Range(func(i, item int) bool {
		if item != i+2 {
			t.Fatalf("Range: item %d at age %d", item, i)
		}
		seen = append(seen, item)
		return len(seen) < 3
	})
	if !slices.Equal(seen, []int{2, 3, 4}) {
		t.Fatalf("Range stopped at %v", seen)
	}
	prefix := []int{-1}
	if got := r.Snapshot(prefix); !slices.Equal(got, []int{-1, 2, 3, 4, 5, 6}) {
		t.Fatalf("Snapshot appended %v", got)
	}
	r.Reset()
	if r.Len() != 0 || len(r.Snapshot(nil)) != 0 {
		t.Fatal("Reset left items")
	}
	r.Add(9)
	if got := r.Snapshot(nil); !slices.Equal(got, []int{9}) {
		t.Fatalf("after Reset: %v", got)
	}
	if added, evicted := r.Counts(); added != 8 || evicted != 2 {
		t.Fatalf("Counts = %d, %d", added, evicted)
	}
}

func TestRingEvictionReleasesPointers(t *testing.T) {
	r, err := NewRing[*int](RingConfig{MaxSize: 4, EvictRatio: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		v := 1
		r.Add(&v)
	}
	// Slots 0 and 1 were evicted and must not keep their items alive.
	if r.buf[0] == nil || r.buf[1] != nil {
		// slot 0 took the fifth item; slot 1 was cleared
		t.Fatalf("slots after eviction: %v", r.buf)
	}
}

func TestRingSampleErrors(t *testing.T) {
	r := newTestRing(t, 4, 0.5)
	rng := rand.New(rand.NewPCG(1, 2))
	dst := []int{7}
	got, err := r.Sample(rng, 3, dst)
	if !errors.Is(err, ErrEmptyBuffer) || !slices.Equal(got, []int{7}) {
		t.Fatalf("Sample of empty ring = %v, %v", got, err)
	}
	r.Add(1)
	if _, err := r.Sample(rng, -1, nil); err == nil {
		t.Fatal("Sample(n = -1) succeeded")
	}
	got, err = r.Sample(rng, 0, dst)
	if err != nil || !slices.Equal(got, []int{7}) {
		t.Fatalf("Sample(n = 0) = %v, %v", got, err)
	}
}

// chiSquare returns Σ (observed - expected)² / expected with expected =
// total·p_k, over the categories of positive probability.
func chiSquare(counts []int, probs []float64) float64 {
	total := 0
	for _, c := range counts {
		total += c
	}
	var x float64
	for k, p := range probs {
		if p == 0 {
			continue
		}
		e := float64(total) * p
		d := float64(counts[k]) - e
		x += d * d / e
	}
	return x
}

// Upper 0.1% points of the chi-square distribution by degrees of freedom.
var chi2Crit001 = map[int]float64{4: 18.467, 7: 24.322, 9: 27.877}

func TestRingSampleUniform(t *testing.T) {
	r := newTestRing(t, 10, 0.2)
	for i := range 12 { // the 11th Add evicted 0 and 1: holds 2..11
		r.Add(i)
	}
	rng := rand.New(rand.NewPCG(42, 7))
	counts := make([]int, 10)
	buf := make([]int, 0, 256)
	for range 400 {
		var err error
		buf, err = r.Sample(rng, 256, buf[:0])
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range buf {
			if v < 2 || v > 11 {
				t.Fatalf("sampled %d, not held", v)
			}
			counts[v-2]++
		}
	}
	probs := make([]float64, 10)
	for i := range probs {
		probs[i] = 0.1
	}
	if x := chiSquare(counts, probs); x > chi2Crit001[9] {
		t.Fatalf("chi-square %.2f > %.2f (counts %v)", x, chi2Crit001[9], counts)
	}
}

func TestRingSampleDeterministic(t *testing.T) {
	draw := func(seed uint64) []int {
		r := newTestRing(t, 100, 0.2)
		for i := range 150 {
			r.Add(i)
		}
		out, err := r.Sample(rand.New(rand.NewPCG(seed, 1)), 64, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	a, b, c := draw(5), draw(5), draw(6)
	if !slices.Equal(a, b) {
		t.Fatalf("same seed, different samples:\n%v\n%v", a, b)
	}
	if slices.Equal(a, c) {
		t.Fatal("different seeds gave the same 64 samples")
	}
}

func TestRingSampleAllocs(t *testing.T) {
	r := newTestRing(t, 1000, 0.2)
	for i := range 1000 {
		r.Add(i)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	buf := make([]int, 0, 256)
	if a := testing.AllocsPerRun(50, func() { buf, _ = r.Sample(rng, 256, buf[:0]) }); a != 0 {
		t.Fatalf("Sample allocates %.1f times per call", a)
	}
	if a := testing.AllocsPerRun(50, func() { r.Add(1) }); a != 0 {
		t.Fatalf("Add allocates %.1f times per call", a)
	}
}

// TestRingConcurrent: several writers add while a reader samples; under
// -race this checks the locking, and the final state checks that no Add
// was lost.
func TestRingConcurrent(t *testing.T) {
	const writers, perWriter = 4, 2000
	r := newTestRing(t, 1000, 0.2)
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				r.Add(w*perWriter + i)
			}
		})
	}
	var rwg sync.WaitGroup
	rwg.Go(func() {
		rng := rand.New(rand.NewPCG(3, 3))
		buf := make([]int, 0, 32)
		for {
			select {
			case <-done:
				return
			default:
			}
			buf, _ = r.Sample(rng, 32, buf[:0])
			for _, v := range buf {
				if v < 0 || v >= writers*perWriter {
					t.Errorf("sampled %d", v)
					return
				}
			}
			_ = r.Snapshot(nil)
		}
	})
	wg.Wait()
	close(done)
	rwg.Wait()
	added, evicted := r.Counts()
	if added != writers*perWriter || int(added-evicted) != r.Len() {
		t.Fatalf("added %d, evicted %d, Len %d", added, evicted, r.Len())
	}
	// Each writer's items are held in the order it added them.
	last := make([]int, writers)
	for i := range last {
		last[i] = -1
	}
	r.Range(func(_ int, v int) bool {
		w, i := v/perWriter, v%perWriter
		if i <= last[w] {
			t.Fatalf("writer %d: item %d after %d", w, i, last[w])
		}
		last[w] = i
		return true
	})
}
