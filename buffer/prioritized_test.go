package buffer

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

func nan() float64 { return math.NaN() }

func newTestPER(t testing.TB, cfg PrioritizedConfig) *Prioritized[int] {
	t.Helper()
	p, err := NewPrioritized[int](cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func testPERConfig(capacity int, alpha, eps float64) PrioritizedConfig {
	cfg := DefaultPrioritizedConfig()
	cfg.Capacity, cfg.Alpha, cfg.Epsilon = capacity, alpha, eps
	return cfg
}

func TestPrioritizedConfigValidation(t *testing.T) {
	def := DefaultPrioritizedConfig()
	if def.Capacity != 10_000 || def.Alpha != 0.6 || def.Beta0 != 0.4 || def.BetaSteps != 100_000 {
		t.Fatalf("defaults %+v", def)
	}
	if err := def.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mod   func(*PrioritizedConfig)
		field string
	}{
		{func(c *PrioritizedConfig) { c.Capacity = 0 }, "Capacity"},
		{func(c *PrioritizedConfig) { c.Capacity = -1 }, "Capacity"},
		{func(c *PrioritizedConfig) { c.Alpha = -0.1 }, "Alpha"},
		{func(c *PrioritizedConfig) { c.Alpha = nan() }, "Alpha"},
		{func(c *PrioritizedConfig) { c.Alpha = math.Inf(1) }, "Alpha"},
		{func(c *PrioritizedConfig) { c.Beta0 = -0.5 }, "Beta0"},
		{func(c *PrioritizedConfig) { c.Beta0 = 1.01 }, "Beta0"},
		{func(c *PrioritizedConfig) { c.Beta0 = nan() }, "Beta0"},
		{func(c *PrioritizedConfig) { c.BetaSteps = 0 }, "BetaSteps"},
		{func(c *PrioritizedConfig) { c.Epsilon = -1e-9 }, "Epsilon"},
		{func(c *PrioritizedConfig) { c.Epsilon = math.Inf(1) }, "Epsilon"},
		{func(c *PrioritizedConfig) { c.InitialMaxPriority = 0 }, "InitialMaxPriority"},
		{func(c *PrioritizedConfig) { c.InitialMaxPriority = nan() }, "InitialMaxPriority"},
		{func(c *PrioritizedConfig) { c.InitialMaxPriority, c.Alpha = 1e300, 2 }, "InitialMaxPriority"},
	} {
		cfg := DefaultPrioritizedConfig()
		c.mod(&cfg)
		_, err := NewPrioritized[int](cfg)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "PrioritizedConfig."+c.field) {
			t.Errorf("NewPrioritized(%+v) = %v; want ErrInvalidConfig naming %s", cfg, err, c.field)
		}
	}
}

func TestBetaAnnealing(t *testing.T) {
	cfg := testPERConfig(8, 0.6, 0)
	cfg.Beta0, cfg.BetaSteps = 0.5, 4
	for step, want := range map[int]float64{-3: 0.5, 0: 0.5, 1: 0.625, 2: 0.75, 3: 0.875, 4: 1, 5: 1, 1 << 40: 1} {
		if got := cfg.AnnealedBeta(step); got != want {
			t.Errorf("AnnealedBeta(%d) = %v, want %v", step, got, want)
		}
	}
	def := DefaultPrioritizedConfig()
	if got := def.AnnealedBeta(50_000); math.Abs(got-0.7) > 1e-15 {
		t.Errorf("default β at step 50,000 = %v, want 0.7", got)
	}

	p := newTestPER(t, cfg)
	p.Add(1)
	rng := rand.New(rand.NewPCG(1, 1))
	b := NewBatch[int](2)
	for k, want := range []float64{0.5, 0.625, 0.75, 0.875, 1, 1} {
		if got := p.Beta(); got != want {
			t.Fatalf("before Sample %d: Beta() = %v, want %v", k, got, want)
		}
		if err := p.Sample(rng, 2, b); err != nil {
			t.Fatal(err)
		}
		if b.Beta != want || p.Step() != k+1 {
			t.Fatalf("Sample %d used β %v at step %d, want %v", k, b.Beta, p.Step(), want)
		}
	}
	p.SetStep(2)
	if p.Beta() != 0.75 {
		t.Fatalf("after SetStep(2): β %v", p.Beta())
	}
	p.SetStep(-1)
	if p.Step() != 0 {
		t.Fatalf("SetStep(-1): step %d", p.Step())
	}
	// The step saturates instead of wrapping to a negative one (β 0.5).
	p.SetStep(math.MaxInt)
	if err := p.Sample(rng, 2, b); err != nil {
		t.Fatal(err)
	}
	if p.Step() != math.MaxInt || p.Beta() != 1 || b.Beta != 1 {
		t.Fatalf("at the largest step: step %d, β %v, batch β %v", p.Step(), p.Beta(), b.Beta)
	}
}

// TestImportanceWeightsHand checks the weights of a 3-item buffer against
// the formula done by hand.
//
// α = 0.5, ε = 0, priorities 1, 16, 256: masses p^α = 1, 4, 16, total 21,
// P = 1/21, 4/21, 16/21, N = 3. With β = 0.5:
//
//	(N·P)^-β = (3/21)^-½, (12/21)^-½, (48/21)^-½ = √7, √7/2, √7/4
//
// and the largest is √7 (the least likely item), so w = 1, 1/2, 1/4.
// One step later β = 0.75 (BetaSteps 2): w = 1, 4^-0.75, 16^-0.75 =
// 1, 1/(2√2), 1/8; at β = 1: 1, 1/4, 1/16.
func TestImportanceWeightsHand(t *testing.T) {
	cfg := testPERConfig(3, 0.5, 0)
	cfg.Beta0, cfg.BetaSteps = 0.5, 2
	p := newTestPER(t, cfg)
	for i := range 3 {
		p.Add(100 + i)
	}
	if err := p.UpdatePriorities([]int{0, 1, 2}, []float64{1, 16, 256}); err != nil {
		t.Fatal(err)
	}
	if tot := p.TotalPriority(); tot != 21 {
		t.Fatalf("total %v, want 21", tot)
	}
	// The hand formula, evaluated literally, agrees with the table below.
	N, total, beta := 3.0, 21.0, 0.5
	maxW := math.Pow(N*1/total, -beta)
	for i, m := range []float64{1, 4, 16} {
		w := math.Pow(N*m/total, -beta) / maxW
		if want := []float64{1, 0.5, 0.25}[i]; math.Abs(w-want) > 1e-15 {
			t.Fatalf("hand formula item %d: %v, want %v", i, w, want)
		}
	}
	want := [][]float32{
		{1, 0.5, 0.25},
		{1, float32(1 / (2 * math.Sqrt2)), 0.125},
		{1, 0.25, 0.0625},
	}
	rng := rand.New(rand.NewPCG(9, 9))
	b := NewBatch[int](3)
	seen := [3]bool{}
	for step, w := range want {
		for range 20 { // only the first call of each group is at this step
			if err := p.Sample(rng, 3, b); err != nil {
				t.Fatal(err)
			}
			for k, idx := range b.Indices {
				seen[idx] = true
				if b.Items[k] != 100+idx {
					t.Fatalf("item %d for index %d", b.Items[k], idx)
				}
				if b.Weights[k] != w[idx] {
					t.Fatalf("step %d (β %v): weight of item %d = %v, want %v", step, b.Beta, idx, b.Weights[k], w[idx])
				}
			}
			if p.Step() <= 2 {
				break
			}
		}
	}
	if seen != [3]bool{true, true, true} {
		t.Fatalf("not every item was drawn: %v", seen)
	}
}

// TestImportanceWeightsFormula compares the weights with (N·P(i))^-β /
// max_j (N·P(j))^-β computed directly, on uneven priorities with ε > 0.
func TestImportanceWeightsFormula(t *testing.T) {
	cfg := testPERConfig(5, 0.6, 0.01)
	cfg.Beta0 = 0.4
	p := newTestPER(t, cfg)
	prio := []float64{0.5, 2, 3, 0, 7.25}
	for i := range prio {
		p.Add(i)
	}
	if err := p.UpdatePriorities([]int{0, 1, 2, 3, 4}, prio); err != nil {
		t.Fatal(err)
	}
	var total float64
	mass := make([]float64, len(prio))
	for i, v := range prio {
		mass[i] = math.Pow(v+0.01, 0.6)
		total += mass[i]
	}
	N := float64(len(prio))
	var maxW float64
	for _, m := range mass {
		maxW = max(maxW, math.Pow(N*m/total, -0.4))
	}
	b := NewBatch[int](64)
	if err := p.Sample(rand.New(rand.NewPCG(2, 3)), 64, b); err != nil {
		t.Fatal(err)
	}
	for k, idx := range b.Indices {
		want := math.Pow(N*mass[idx]/total, -0.4) / maxW
		if d := math.Abs(float64(b.Weights[k]) - want); d > 1e-7*want {
			t.Fatalf("item %d: weight %v, want %v", idx, b.Weights[k], want)
		}
	}
}

func TestPrioritizedFrequencies(t *testing.T) {
	for _, alpha := range []float64{0.6, 0, 1} {
		cfg := testPERConfig(10, alpha, 0)
		p := newTestPER(t, cfg)
		// Items 0..7 with priorities 1..8, item 8 with priority 0 (never
		// drawn when ε = 0, unless α = 0), item 9 never added.
		ids := make([]int, 9)
		prio := make([]float64, 9)
		for i := range ids {
			ids[i] = p.Add(i)
			prio[i] = float64(i + 1)
		}
		prio[8] = 0
		if err := p.UpdatePriorities(ids, prio); err != nil {
			t.Fatal(err)
		}
		probs := make([]float64, 9)
		var total float64
		for i, v := range prio {
			if v > 0 || alpha == 0 {
				probs[i] = math.Pow(v, alpha)
				total += probs[i]
			}
		}
		for i := range probs {
			probs[i] /= total
		}
		df := 7
		if alpha == 0 {
			df = 8
		}
		crit := map[int]float64{7: 24.322, 8: 26.125}[df]
		// Batches of 1 are plain proportional draws (the multinomial case
		// the chi-square bound is made for); batches of 64 are stratified,
		// whose counts vary less, so the same bound holds a fortiori.
		single, batches := 40_000, 2000
		if testing.Short() { // the race detector slows sampling 100x
			single, batches = 10_000, 500
		}
		for _, c := range []struct{ batch, batches int }{{1, single}, {64, batches}} {
			rng := rand.New(rand.NewPCG(2016, uint64(c.batch)))
			b := NewBatch[int](c.batch)
			counts := make([]int, 9)
			for range c.batches {
				if err := p.Sample(rng, c.batch, b); err != nil {
					t.Fatal(err)
				}
				for _, idx := range b.Indices {
					counts[idx]++
				}
			}
			if alpha != 0 && counts[8] != 0 {
				t.Fatalf("α %v: zero-priority item drawn %d times", alpha, counts[8])
			}
			x := chiSquare(counts, probs)
			t.Logf("α %v, batch %d: chi-square %.3f (df %d, 0.1%% point %.3f), counts %v", alpha, c.batch, x, df, crit, counts)
			if x > crit {
				t.Fatalf("α %v, batch %d: chi-square %.2f > %.2f; counts %v, probabilities %v", alpha, c.batch, x, crit, counts, probs)
			}
		}
	}
}

func TestPrioritizedNewItemsGetMaxPriority(t *testing.T) {
	p := newTestPER(t, testPERConfig(8, 0.5, 0))
	a, b := p.Add(0), p.Add(1)
	if m, _ := p.Priority(a); m != 1 {
		t.Fatalf("first item mass %v, want 1 (InitialMaxPriority 1)", m)
	}
	if err := p.UpdatePriorities([]int{a, b}, []float64{9, 0.25}); err != nil {
		t.Fatal(err)
	}
	c := p.Add(2)
	if m, _ := p.Priority(c); m != 3 {
		t.Fatalf("new item after max 9: mass %v, want 9^0.5 = 3", m)
	}
	// The maximum is the largest priority ever set, as in Schaul et al.'s
	// reference: lowering the item that set it does not lower it.
	if err := p.UpdatePriorities([]int{a}, []float64{0.25}); err != nil {
		t.Fatal(err)
	}
	d := p.Add(3)
	if m, _ := p.Priority(d); m != 3 {
		t.Fatalf("after lowering: new item mass %v, want 3", m)
	}
	if m, _ := p.Priority(b); m != 0.5 {
		t.Fatalf("item b mass %v, want 0.5", m)
	}
	if tot := p.TotalPriority(); tot != 0.5+0.5+3+3 {
		t.Fatalf("total %v, want 7", tot)
	}
}

func TestPrioritizedOverwriteAndUpdateErrors(t *testing.T) {
	p := newTestPER(t, testPERConfig(4, 1, 0))
	for i := range 6 {
		if idx := p.Add(10 * i); idx != i {
			t.Fatalf("Add returned %d, want %d", idx, i)
		}
	}
	if p.Len() != 4 || p.Cap() != 4 || p.Added() != 6 {
		t.Fatalf("Len %d, Cap %d, Added %d", p.Len(), p.Cap(), p.Added())
	}
	for i := range 8 {
		v, ok := p.Get(i)
		if held := i >= 2 && i < 6; ok != held || (held && v != 10*i) {
			t.Fatalf("Get(%d) = %d, %v", i, v, ok)
		}
	}
	if err := p.UpdatePriorities([]int{2, 3, 4, 5}, []float64{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	// Index 0 was overwritten by 4: its update must not touch item 4.
	if err := p.UpdatePriorities([]int{0, 1}, []float64{50, 60}); err != nil {
		t.Fatal(err)
	}
	if m, _ := p.Priority(4); m != 3 || p.StaleUpdates() != 2 {
		t.Fatalf("stale update: item 4 mass %v, %d stale", m, p.StaleUpdates())
	}
	before := p.TotalPriority()
	for _, c := range []struct {
		idx  []int
		prio []float64
		is   error
		text string
	}{
		{[]int{2, 6}, []float64{1, 1}, ErrIndexOutOfRange, "idx[1] = 6"},
		{[]int{-1}, []float64{1}, ErrIndexOutOfRange, "idx[0] = -1"},
		{[]int{2, 3}, []float64{5, nan()}, ErrInvalidPriority, "prio[1] = NaN (idx 3)"},
		{[]int{2, 3}, []float64{5, -1}, ErrInvalidPriority, "prio[1] = -1 (idx 3)"},
		{[]int{2}, []float64{math.Inf(1)}, ErrInvalidPriority, "prio[0] = +Inf"},
		{[]int{2}, []float64{1e308}, ErrInvalidPriority, "prio[0] = 1e+308"}, // α 1: 4·1e308 overflows
		{[]int{2, 3}, []float64{1}, nil, "2 indices but 1 priorities"},
	} {
		err := p.UpdatePriorities(c.idx, c.prio)
		if err == nil || (c.is != nil && !errors.Is(err, c.is)) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("UpdatePriorities(%v, %v) = %v; want %v mentioning %q", c.idx, c.prio, err, c.is, c.text)
		}
	}
	if after := p.TotalPriority(); after != before {
		t.Fatalf("refused updates changed the total: %v -> %v", before, after)
	}
	if m, _ := p.Priority(2); m != 1 {
		t.Fatalf("refused update changed item 2: %v", m)
	}
	// Samples only return held indices, with their items.
	b := NewBatch[int](50)
	if err := p.Sample(rand.New(rand.NewPCG(1, 2)), 50, b); err != nil {
		t.Fatal(err)
	}
	for k, idx := range b.Indices {
		if idx < 2 || idx >= 6 || b.Items[k] != 10*idx {
			t.Fatalf("sampled index %d, item %d", idx, b.Items[k])
		}
	}
}

func TestPrioritizedSampleErrors(t *testing.T) {
	p := newTestPER(t, testPERConfig(4, 0.6, 0))
	rng := rand.New(rand.NewPCG(1, 2))
	b := NewBatch[int](4)
	if err := p.Sample(rng, 4, b); !errors.Is(err, ErrEmptyBuffer) {
		t.Fatalf("empty: %v", err)
	}
	p.Add(1)
	if err := p.Sample(rng, 0, b); err == nil {
		t.Fatal("n = 0 accepted")
	}
	if err := p.Sample(rng, 1, nil); err == nil {
		t.Fatal("nil batch accepted")
	}
	if err := p.UpdatePriorities([]int{0}, []float64{0}); err != nil {
		t.Fatal(err)
	}
	err := p.Sample(rng, 4, b)
	if !errors.Is(err, ErrEmptyBuffer) || !strings.Contains(err.Error(), "priorities are zero") {
		t.Fatalf("all-zero priorities: %v", err)
	}
	if p.Step() != 0 {
		t.Fatalf("failed samples advanced β's step to %d", p.Step())
	}
}

func TestPrioritizedDeterministic(t *testing.T) {
	run := func(seed uint64) ([]int, []float32) {
		p := newTestPER(t, testPERConfig(500, 0.6, 1e-6))
		src := rand.New(rand.NewPCG(11, 11)) // the same priorities every run
		rng := rand.New(rand.NewPCG(seed, 0))
		b := NewBatch[int](32)
		var idx []int
		var w []float32
		for i := range 800 {
			p.Add(i)
			if i%50 == 49 {
				if err := p.Sample(rng, 32, b); err != nil {
					t.Fatal(err)
				}
				prio := make([]float64, len(b.Indices))
				for k := range prio {
					prio[k] = src.ExpFloat64()
				}
				if err := p.UpdatePriorities(b.Indices, prio); err != nil {
					t.Fatal(err)
				}
				idx = append(idx, b.Indices...)
				w = append(w, b.Weights...)
			}
		}
		return idx, w
	}
	i1, w1 := run(3)
	i2, w2 := run(3)
	i3, _ := run(4)
	if !slices.Equal(i1, i2) || !slices.Equal(w1, w2) {
		t.Fatal("same seed, different samples or weights")
	}
	if slices.Equal(i1, i3) {
		t.Fatal("different seeds, same samples")
	}
}

func TestPrioritizedSampleAllocs(t *testing.T) {
	p := newTestPER(t, testPERConfig(1000, 0.6, 1e-6))
	for i := range 1500 {
		p.Add(i)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	b := NewBatch[int](256)
	prio := make([]float64, 256)
	if a := testing.AllocsPerRun(50, func() {
		if err := p.Sample(rng, 256, b); err != nil {
			t.Fatal(err)
		}
		if err := p.UpdatePriorities(b.Indices, prio); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Fatalf("Sample+UpdatePriorities allocate %.1f times per call", a)
	}
	if a := testing.AllocsPerRun(50, func() { p.Add(1) }); a != 0 {
		t.Fatalf("Add allocates %.1f times per call", a)
	}
}

// TestPrioritizedConcurrent: several actors add while one learner samples
// and updates. Under -race this checks the locking; each sampled (index,
// item) pair is checked against what the actor that added it recorded, and
// the final counts against the number of Adds.
func TestPrioritizedConcurrent(t *testing.T) {
	const actors = 4
	perActor := 3000
	if testing.Short() {
		perActor = 1000
	}
	p := newTestPER(t, testPERConfig(512, 0.6, 1e-6))
	added := make([][][2]int, actors) // per actor: (index, item)
	var wg sync.WaitGroup
	for a := range actors {
		wg.Go(func() {
			for i := range perActor {
				item := a*perActor + i
				added[a] = append(added[a], [2]int{p.Add(item), item})
			}
		})
	}
	done := make(chan struct{})
	var sampled [][2]int
	var lwg sync.WaitGroup
	lwg.Go(func() {
		rng := rand.New(rand.NewPCG(5, 5))
		b := NewBatch[int](32)
		prio := make([]float64, 32)
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := p.Sample(rng, 32, b); errors.Is(err, ErrEmptyBuffer) {
				continue
			} else if err != nil {
				t.Error(err)
				return
			}
			for k, idx := range b.Indices {
				sampled = append(sampled, [2]int{idx, b.Items[k]})
				prio[k] = rng.Float64() * 3
				if w := b.Weights[k]; !(w > 0 && w <= 1) {
					t.Errorf("weight %v", w)
				}
			}
			if err := p.UpdatePriorities(b.Indices, prio); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	close(done)
	lwg.Wait()

	itemOf := make(map[int]int, actors*perActor)
	for _, pairs := range added {
		for k, pr := range pairs {
			if k > 0 && pr[0] <= pairs[k-1][0] {
				t.Fatalf("indices not increasing for one actor: %v after %v", pr, pairs[k-1])
			}
			if _, dup := itemOf[pr[0]]; dup {
				t.Fatalf("index %d returned twice", pr[0])
			}
			itemOf[pr[0]] = pr[1]
		}
	}
	if len(itemOf) != actors*perActor || p.Added() != actors*perActor || p.Len() != 512 {
		t.Fatalf("%d distinct indices, Added %d, Len %d", len(itemOf), p.Added(), p.Len())
	}
	for _, s := range sampled {
		if itemOf[s[0]] != s[1] {
			t.Fatalf("sampled index %d with item %d; Add gave it item %d", s[0], s[1], itemOf[s[0]])
		}
	}
	t.Logf("%d items sampled, %d stale updates", len(sampled), p.StaleUpdates())
}
