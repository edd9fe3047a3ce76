package buffer

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// perModel is a brute-force reference of Prioritized: a map from held index
// to its mass, scanned linearly.
type perModel struct {
	cfg    PrioritizedConfig
	next   int
	mass   map[int]float64 // held index -> (p+ε)^α
	maxRaw float64
	step   int
	stale  uint64
}

func newPERModel(cfg PrioritizedConfig) *perModel {
	return &perModel{cfg: cfg, mass: map[int]float64{}, maxRaw: cfg.InitialMaxPriority + cfg.Epsilon}
}

func (m *perModel) add() int {
	id := m.next
	m.mass[id] = math.Pow(m.maxRaw, m.cfg.Alpha)
	delete(m.mass, id-m.cfg.Capacity)
	m.next++
	return id
}

// update returns the error class the buffer must report, and applies the
// update when there is none.
func (m *perModel) update(idx []int, prio []float64) error {
	limit := m.cfg.maxRawPriority()
	for _, v := range prio {
		if math.IsNaN(v) || v < 0 || math.IsInf(v, 0) || v+m.cfg.Epsilon > limit {
			return ErrInvalidPriority
		}
	}
	for _, i := range idx {
		if i < 0 || i >= m.next {
			return ErrIndexOutOfRange
		}
	}
	for k, i := range idx {
		if _, held := m.mass[i]; !held {
			m.stale++
			continue
		}
		raw := prio[k] + m.cfg.Epsilon
		m.mass[i] = math.Pow(raw, m.cfg.Alpha)
		m.maxRaw = max(m.maxRaw, raw)
	}
	return nil
}

// slots lists the held masses in slot order (the tree's order), with the
// index held in each slot, -1 for an empty slot.
func (m *perModel) slots() (ids []int, mass []float64) {
	ids = make([]int, m.cfg.Capacity)
	mass = make([]float64, m.cfg.Capacity)
	for i := range ids {
		ids[i] = -1
	}
	for id, v := range m.mass {
		ids[id%m.cfg.Capacity] = id
		mass[id%m.cfg.Capacity] = v
	}
	return ids, mass
}

func (m *perModel) totalAndMin() (total, minPos float64) {
	minPos = math.Inf(1)
	_, mass := m.slots()
	for _, v := range mass {
		total += v
		if v > 0 {
			minPos = min(minPos, v)
		}
	}
	return total, minPos
}

func fuzzItem(idx int) int { return 7*idx + 3 }

var (
	fuzzAlphas = []float64{0, 0.5, 0.6, 1, 2}
	fuzzEps    = []float64{0, 1e-6, 0.25}
	fuzzBeta0  = []float64{0, 0.4, 1}
	fuzzPrios  = []float64{0, 0.5, 1, 2, 3.7, 100, 1e-3, math.NaN(), -1, math.Inf(1), 1e308, 1e-300}
)

// FuzzPrioritized runs a sequence of Add, UpdatePriorities, Sample and
// SetStep calls decoded from the input on a Prioritized buffer and on
// perModel, and after every call checks that they agree: errors, held
// items, each item's mass, the tree's sums and minima, β, and for every
// sampled item its index, item, segment and importance weight.
func FuzzPrioritized(f *testing.F) {
	f.Add([]byte{3, 2, 1, 0, 0, 0, 0, 2, 3, 1, 2, 5, 1, 6, 2, 4})
	f.Add([]byte{0, 0, 0, 0, 0, 2, 0, 1, 0, 0, 2, 1})                                         // capacity 1
	f.Add([]byte{5, 14, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 3, 0, 7, 1, 0, 9, 2, 4, 3, 6, 2, 5}) // wraps, NaN, stale
	f.Add([]byte{11, 3, 2, 0, 1, 0, 1, 1, 9, 1, 1, 10, 10, 2, 5, 0, 2, 3})                    // overflow, inf
	f.Add([]byte{7, 4, 5, 0, 0, 0, 0, 1, 4, 0, 0, 1, 0, 2, 0, 3, 0, 2, 3, 3, 7, 2, 5})        // all zero with ε 0
	f.Fuzz(func(t *testing.T, data []byte) { runPERSequence(t, data) })
}

// TestPrioritizedAgainstModel runs FuzzPrioritized's harness on random
// operation sequences from a fixed seed, so that `go test` covers far more
// than the seed corpus, and checks that every outcome class was reached.
func TestPrioritizedAgainstModel(t *testing.T) {
	runs := 3000
	if testing.Short() {
		runs = 400
	}
	rng := rand.New(rand.NewPCG(77, 77))
	var total perOutcomes
	for range runs {
		data := make([]byte, 3+rng.IntN(300))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		o := runPERSequence(t, data)
		for k, v := range o {
			total[k] += v
		}
	}
	t.Logf("outcomes: %v", total)
	for k, v := range total {
		if v == 0 {
			t.Errorf("outcome %d never reached: %v", k, total)
		}
	}
}

// perOutcomes counts: adds that overwrote, updates applied, updates
// refused for a priority, for an index, stale update entries, samples,
// samples refused as empty.
type perOutcomes [7]int

// runPERSequence decodes data into a configuration and a sequence of
// operations, runs them on a Prioritized buffer and on perModel, checks
// them after every operation, and counts the outcomes.
func runPERSequence(t *testing.T, data []byte) (o perOutcomes) {
	if len(data) < 3 {
		return o
	}
	cfg := PrioritizedConfig{
		Capacity:           1 + int(data[0]%12),
		Alpha:              fuzzAlphas[int(data[1])%len(fuzzAlphas)],
		Epsilon:            fuzzEps[int(data[1]/5)%len(fuzzEps)],
		Beta0:              fuzzBeta0[int(data[2])%len(fuzzBeta0)],
		BetaSteps:          1 + int(data[2]/3)%5,
		InitialMaxPriority: 1,
	}
	p, err := NewPrioritized[int](cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := newPERModel(cfg)
	// Two generators in lockstep: Sample draws exactly n values.
	rng := rand.New(rand.NewPCG(uint64(len(data)), 1))
	ref := rand.New(rand.NewPCG(uint64(len(data)), 1))
	b := NewBatch[int](1)
	data = data[3:]
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		v := int(data[0])
		data = data[1:]
		return v
	}
	for len(data) > 0 {
		switch op := next() % 4; op {
		case 0:
			if m.next >= cfg.Capacity {
				o[0]++
			}
			if got, want := p.Add(fuzzItem(m.next)), m.add(); got != want {
				t.Fatalf("Add returned %d, want %d", got, want)
			}
		case 1:
			n := 1 + next()%4
			idx := make([]int, n)
			prio := make([]float64, n)
			for k := range n {
				// From two below the oldest held index to two past the newest.
				idx[k] = m.next - cfg.Capacity - 2 + next()%(cfg.Capacity+5)
				prio[k] = fuzzPrios[next()%len(fuzzPrios)]
			}
			stale := m.stale
			want := m.update(idx, prio)
			if err := p.UpdatePriorities(idx, prio); !errors.Is(err, want) || (err == nil) != (want == nil) {
				t.Fatalf("UpdatePriorities(%v, %v) = %v, want %v", idx, prio, err, want)
			}
			switch want {
			case nil:
				o[1]++
			case ErrInvalidPriority:
				o[2]++
			case ErrIndexOutOfRange:
				o[3]++
			}
			o[4] += int(m.stale - stale)
		case 2:
			if checkSample(t, p, m, rng, ref, 1+next()%6, b) {
				o[5]++
			} else {
				o[6]++
			}
		case 3:
			s := next() % 8
			p.SetStep(s)
			m.step = s
		}
		checkAgainstModel(t, p, m)
	}
	return o
}

func checkAgainstModel(t *testing.T, p *Prioritized[int], m *perModel) {
	t.Helper()
	if p.Len() != len(m.mass) || p.Added() != m.next || p.StaleUpdates() != m.stale || p.Step() != m.step {
		t.Fatalf("Len %d, Added %d, stale %d, step %d; model %d, %d, %d, %d",
			p.Len(), p.Added(), p.StaleUpdates(), p.Step(), len(m.mass), m.next, m.stale, m.step)
	}
	for id := m.next - m.cfg.Capacity - 2; id < m.next+2; id++ {
		want, held := m.mass[id]
		got, ok := p.Priority(id)
		item, iok := p.Get(id)
		if ok != held || iok != held || got != want || (held && item != fuzzItem(id)) {
			t.Fatalf("index %d: mass %v (%v), item %d (%v); model %v (%v)", id, got, ok, item, iok, want, held)
		}
	}
	total, minPos := m.totalAndMin()
	if d := math.Abs(p.TotalPriority() - total); d > 1e-12*total {
		t.Fatalf("total %v, brute force %v", p.TotalPriority(), total)
	}
	if p.tree.minPositive() != minPos {
		t.Fatalf("min %v, brute force %v", p.tree.minPositive(), minPos)
	}
	if err := p.tree.check(m.cfg.Capacity); err != nil {
		t.Fatal(err)
	}
	if p.Beta() != m.cfg.AnnealedBeta(m.step) {
		t.Fatalf("β %v, want %v", p.Beta(), m.cfg.AnnealedBeta(m.step))
	}
}

// checkSample samples n items and checks them against the model; false
// when the buffer was (rightly) empty.
func checkSample(t *testing.T, p *Prioritized[int], m *perModel, rng, ref *rand.Rand, n int, b *Batch[int]) bool {
	t.Helper()
	total, minPos := m.totalAndMin()
	err := p.Sample(rng, n, b)
	if len(m.mass) == 0 || total == 0 {
		for range n { // drawn before the buffer is found empty
			ref.Float64()
		}
		if !errors.Is(err, ErrEmptyBuffer) {
			t.Fatalf("Sample with %d items of total mass %v: %v, want ErrEmptyBuffer", len(m.mass), total, err)
		}
		return false
	}
	if err != nil {
		t.Fatalf("Sample(%d): %v", n, err)
	}
	beta := m.cfg.AnnealedBeta(m.step)
	m.step++
	if len(b.Items) != n || len(b.Indices) != n || len(b.Weights) != n || b.Beta != beta {
		t.Fatalf("batch of %d/%d/%d at β %v, want %d at β %v", len(b.Items), len(b.Indices), len(b.Weights), b.Beta, n, beta)
	}
	ids, mass := m.slots()
	tol := 1e-9 * total
	for k, id := range b.Indices {
		v, held := m.mass[id]
		if !held || v <= 0 {
			t.Fatalf("sampled index %d: held %v, mass %v", id, held, v)
		}
		if b.Items[k] != fuzzItem(id) {
			t.Fatalf("sampled index %d with item %d", id, b.Items[k])
		}
		// The item's cumulative range, in slot order, must hold the point
		// u of segment k (within rounding; past the end for the last item).
		u := (float64(k) + ref.Float64()) * total / float64(n)
		var lo float64
		s := id % m.cfg.Capacity
		if ids[s] != id {
			t.Fatalf("model slots disagree")
		}
		for j := range s {
			lo += mass[j]
		}
		hi := lo + v
		last := true
		for j := s + 1; j < len(mass); j++ {
			last = last && mass[j] == 0
		}
		if u < lo-tol || (u >= hi+tol && !last) {
			t.Fatalf("segment %d of %d: u %v outside index %d's range [%v, %v)", k, n, u, id, lo, hi)
		}
		want := float32(math.Pow(v/minPos, -beta))
		if b.Weights[k] != want {
			t.Fatalf("index %d: weight %v, want (%v/%v)^-%v = %v", id, b.Weights[k], v, minPos, beta, want)
		}
	}
	return true
}
