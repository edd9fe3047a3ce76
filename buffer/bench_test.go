package buffer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// benchItem stands for a transition stored by value: a few observation
// features, an action, a reward and a log-probability (48 bytes).
type benchItem struct {
	obs    [8]float32
	action int32
	reward float32
	logp   float32
	value  float32
}

func benchRing(b *testing.B, size int) *Ring[benchItem] {
	r, err := NewRing[benchItem](RingConfig{MaxSize: size, EvictRatio: DefaultRingEvictRatio})
	if err != nil {
		b.Fatal(err)
	}
	for i := range size {
		r.Add(benchItem{action: int32(i)})
	}
	return r
}

var (
	perCacheMu sync.Mutex
	perCache   = map[int]*Prioritized[benchItem]{}
)

// benchPER returns a full buffer of the given size whose priorities are
// exponentially distributed (|TD errors| of a learner in progress). Filled
// buffers are cached: building the 1M one takes longer than measuring it.
func benchPER(b *testing.B, size int) *Prioritized[benchItem] {
	perCacheMu.Lock()
	defer perCacheMu.Unlock()
	if p, ok := perCache[size]; ok {
		return p
	}
	cfg := DefaultPrioritizedConfig()
	cfg.Capacity = size
	// β stays at 0.4 after SetStep(0), however many samples a benchmark
	// takes, so that every weight costs a math.Pow (at β = 1 a division
	// suffices; see BenchmarkPrioritizedSampleBetaOne).
	cfg.BetaSteps = math.MaxInt
	p, err := NewPrioritized[benchItem](cfg)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	idx := make([]int, 0, 1024)
	prio := make([]float64, 0, 1024)
	for i := range size {
		idx = append(idx, p.Add(benchItem{action: int32(i)}))
		prio = append(prio, rng.ExpFloat64())
		if len(idx) == cap(idx) || i == size-1 {
			if err := p.UpdatePriorities(idx, prio); err != nil {
				b.Fatal(err)
			}
			idx, prio = idx[:0], prio[:0]
		}
	}
	perCache[size] = p
	runtime.GC()
	return p
}

// reportItems adds items/s; with one op per item, ns/op is ns per item.
func reportItems(b *testing.B) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "items/s")
	}
}

// BenchmarkRingSample: one op is one item sampled, in batches.
func BenchmarkRingSample(b *testing.B) {
	for _, size := range []int{10_000, 1_000_000} {
		for _, batch := range []int{256} {
			b.Run(fmt.Sprintf("size=%d/batch=%d", size, batch), func(b *testing.B) {
				r := benchRing(b, size)
				rng := rand.New(rand.NewPCG(1, 1))
				dst := make([]benchItem, 0, batch)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i += batch {
					var err error
					if dst, err = r.Sample(rng, min(batch, b.N-i), dst[:0]); err != nil {
						b.Fatal(err)
					}
				}
				reportItems(b)
			})
		}
	}
}

// BenchmarkRingAdd: one op is one Add into a full ring (evictions included).
func BenchmarkRingAdd(b *testing.B) {
	for _, size := range []int{10_000} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			r := benchRing(b, size)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				r.Add(benchItem{action: int32(i)})
			}
		})
	}
}

// BenchmarkPrioritizedSample: one op is one item sampled (with its index
// and importance weight), in stratified batches.
func BenchmarkPrioritizedSample(b *testing.B) {
	for _, size := range []int{10_000, 1_000_000} {
		for _, batch := range []int{256} {
			b.Run(fmt.Sprintf("size=%d/batch=%d", size, batch), func(b *testing.B) {
				p := benchPER(b, size)
				p.SetStep(0) // β = 0.4
				rng := rand.New(rand.NewPCG(1, 1))
				out := NewBatch[benchItem](batch)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i += batch {
					if err := p.Sample(rng, min(batch, b.N-i), out); err != nil {
						b.Fatal(err)
					}
				}
				reportItems(b)
			})
		}
	}
}

// BenchmarkPrioritizedSampleBetaOne: as BenchmarkPrioritizedSample at the
// end of β's annealing, where weights need no math.Pow.
func BenchmarkPrioritizedSampleBetaOne(b *testing.B) {
	for _, size := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("size=%d/batch=256", size), func(b *testing.B) {
			one := benchPER(b, size)
			one.SetStep(math.MaxInt) // β = 1 from here on
			rng := rand.New(rand.NewPCG(1, 1))
			out := NewBatch[benchItem](256)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += 256 {
				if err := one.Sample(rng, min(256, b.N-i), out); err != nil {
					b.Fatal(err)
				}
			}
			if out.Beta != 1 {
				b.Fatalf("β %v", out.Beta)
			}
			reportItems(b)
		})
	}
}

// BenchmarkPrioritizedUpdate: one op is one priority updated, in batches
// of sampled indices (as a learner does after a step).
func BenchmarkPrioritizedUpdate(b *testing.B) {
	for _, size := range []int{10_000, 1_000_000} {
		for _, batch := range []int{256} {
			b.Run(fmt.Sprintf("size=%d/batch=%d", size, batch), func(b *testing.B) {
				p := benchPER(b, size)
				rng := rand.New(rand.NewPCG(2, 2))
				// A pool of sampled batches, so that the timed loop only updates.
				const pool = 64
				idx := make([][]int, pool)
				prio := make([][]float64, pool)
				out := NewBatch[benchItem](batch)
				for k := range pool {
					if err := p.Sample(rng, batch, out); err != nil {
						b.Fatal(err)
					}
					idx[k] = append([]int(nil), out.Indices...)
					prio[k] = make([]float64, batch)
					for j := range prio[k] {
						prio[k][j] = rng.ExpFloat64()
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i, k := 0, 0; i < b.N; i, k = i+batch, (k+1)%pool {
					n := min(batch, b.N-i)
					if err := p.UpdatePriorities(idx[k][:n], prio[k][:n]); err != nil {
						b.Fatal(err)
					}
				}
				reportItems(b)
			})
		}
	}
}

// BenchmarkPrioritizedAdd: one op is one Add into a full buffer.
func BenchmarkPrioritizedAdd(b *testing.B) {
	for _, size := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			p := benchPER(b, size)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				p.Add(benchItem{action: int32(i)})
			}
		})
	}
}

// BenchmarkContended: actors add from every goroutine of b.RunParallel
// (one op is one Add) while one learner samples batches of 256 and updates
// their priorities as fast as it can; learner_items/s is the learner's
// sampling rate under that contention.
func BenchmarkContended(b *testing.B) {
	const batch = 256
	for _, buffer := range []string{"prioritized", "ring"} {
		b.Run(fmt.Sprintf("buffer=%s/size=10000/batch=%d", buffer, batch), func(b *testing.B) {
			var (
				add    func(benchItem)
				learn  func(*rand.Rand) error
				sample atomic.Int64
			)
			switch buffer {
			case "prioritized":
				p := benchPER(b, 10_000)
				out := NewBatch[benchItem](batch)
				prio := make([]float64, batch)
				add = func(it benchItem) { p.Add(it) }
				learn = func(rng *rand.Rand) error {
					if err := p.Sample(rng, batch, out); err != nil {
						return err
					}
					for k := range prio {
						prio[k] = rng.ExpFloat64()
					}
					return p.UpdatePriorities(out.Indices, prio)
				}
			case "ring":
				r := benchRing(b, 10_000)
				dst := make([]benchItem, 0, batch)
				add = func(it benchItem) { r.Add(it) }
				learn = func(rng *rand.Rand) (err error) {
					dst, err = r.Sample(rng, batch, dst[:0])
					return err
				}
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(3, 3))
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := learn(rng); err != nil {
						b.Error(err)
						return
					}
					sample.Add(batch)
				}
			})
			b.RunParallel(func(pb *testing.PB) {
				var i int32
				for pb.Next() {
					i++
					add(benchItem{action: i})
				}
			})
			close(stop)
			wg.Wait()
			if s := b.Elapsed().Seconds(); s > 0 {
				b.ReportMetric(float64(sample.Load())/s, "learner_items/s")
			}
		})
	}
}
