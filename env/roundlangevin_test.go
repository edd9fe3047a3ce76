package env

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// langevinState is a RoundState over types v100 and k80 with the given
// capacities, one row of throughputs per job and attained services.
func langevinState(capacity []int, thr [][]float64, attained []float64) *RoundState {
	s := roundState(len(capacity), capacity, thr, nil)
	s.Types = []string{"v100", "k80"}[:len(capacity)]
	for i := range s.Jobs {
		if attained != nil {
			s.Jobs[i].Attained = attained[i]
		}
	}
	return s
}

func newLangevin(t testing.TB, mod func(*LangevinRoundParams)) *LangevinRound {
	t.Helper()
	prm := DefaultLangevinRoundParams
	prm.Temperature = 0
	if mod != nil {
		mod(&prm)
	}
	p, err := NewLangevinRound(prm)
	if err != nil {
		t.Fatal(err)
	}
	p.Seed(1)
	return p
}

func allocate(t *testing.T, p AllocationPolicy, s *RoundState) []float64 {
	t.Helper()
	x := make([]float64, len(s.Jobs)*len(s.Types))
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	return x
}

// handParams are the parameters of the hand-worked tests: temperature 0,
// unit speed weight with a 10 h prior, service weight 0.3, no pressure,
// damping 0.1 (+0.01 per recent move), 8 moves per allocation.
func handParams(q *LangevinRoundParams) {
	q.Temperature, q.Speed, q.Prior, q.ServiceScale, q.Service, q.Pressure, q.Wait = 0, 1, 36000, 3600, 0.3, 0, 0
	q.Damping, q.DampingPerMove, q.MaxMoves = 0.1, 0.01, 8
}

// TestLangevinHand works the energy out by hand at temperature 0 on 2 v100
// and 2 k80 and three 1-GPU jobs: job 0 runs 10 and 5 steps/s (slowdown 2
// on k80), job 1 10 and 8 (1.25), job 2 10 and 2 (5) with 3600 GPU-s
// attained. Weights (r + 10 h)/1 h: 10, 10, 11; service terms 0, 0,
// 0.3·ln 2 = 0.208. Energies (v100, k80): job 0 (0, 10), job 1 (0, 2.5),
// job 2 (0.208, 11·4 + 0.208 = 44.208). Order: jobs 0 and 1 (0, first on
// ties), job 2. Jobs 0 and 1 take the v100s, job 2 the k80s. The exchange:
// job 2 gains 44 on v100; trading with job 0 costs 10, with job 1 2.5, so
// jobs 1 and 2 trade (no job ran before: no token). FIFO-perf leaves job
// 2, which loses most on k80, there.
func TestLangevinHand(t *testing.T) {
	thr := [][]float64{{10, 5}, {10, 8}, {10, 2}}
	att := []float64{0, 0, 3600}
	x := allocate(t, newLangevin(t, handParams), langevinState([]int{2, 2}, thr, att))
	checkX(t, "langevin", x, []float64{1, 0, 0, 1, 1, 0})
	f := allocate(t, &FIFO{Perf: true}, langevinState([]int{2, 2}, thr, att))
	checkX(t, "fifo_perf", f, []float64{1, 0, 1, 0, 0, 1})
	// The registry builds the policy with the defaults, which the hand
	// parameters are but for the temperature.
	pol, err := AllocationPolicyByName("langevin")
	if err != nil {
		t.Fatal(err)
	}
	lr, ok := pol.(*LangevinRound)
	if !ok || lr.P != DefaultLangevinRoundParams {
		t.Fatalf("registry: %T %+v", pol, pol)
	}
	q := DefaultLangevinRoundParams
	handParams(&q)
	q.Temperature = DefaultLangevinRoundParams.Temperature
	if q != DefaultLangevinRoundParams {
		t.Fatalf("hand parameters %+v are not the defaults %+v", q, DefaultLangevinRoundParams)
	}
}

// TestLangevinExchange: when jobs 0 and 1 already run on the v100s, job 2
// arrives on the k80s, and the trade with job 1 moves a running job: it
// happens with tokens (one spent) and not with MaxMoves 0.
func TestLangevinExchange(t *testing.T) {
	thr := [][]float64{{10, 5}, {10, 8}, {10, 2}}
	att := []float64{0, 0, 3600}
	for _, moves := range []int{8, 0} {
		p := newLangevin(t, func(q *LangevinRoundParams) { handParams(q); q.MaxMoves = moves })
		checkX(t, "start", allocate(t, p, langevinState([]int{2, 2}, thr[:2], att[:2])), []float64{1, 0, 1, 0})
		want := []float64{1, 0, 0, 1, 1, 0}
		if moves == 0 {
			want = []float64{1, 0, 1, 0, 0, 1}
		}
		checkX(t, "arrival", allocate(t, p, langevinState([]int{2, 2}, thr, att)), want)
		if wantMoves := min(moves, 1); p.Moves() != wantMoves {
			t.Fatalf("max moves %d: %d moves, want %d", moves, p.Moves(), wantMoves)
		}
	}
}

// TestLangevinDamping moves one job between types with a 1 h weight (no
// attained service, prior 1 h), so that its energy on a type is its
// slowdown there minus 1; 0.1 damping at D ≈ 0, all calls at one time so
// nothing evaporates. It starts on k80 (1 vs 2 steps/s); at 10 (v100) and
// 9.5 (k80) the move would gain 10/9.5 - 1 = 0.053 < 0.1 and it stays; at
// 8.5 the gain is 0.176 > 0.1 and it moves to v100. Flipped (v100 8.5, k80
// 10), moving back gains 0.176 again: without per-move damping it moves
// back; with 0.1 per recent move the threshold is 0.1 + 0.1·1 = 0.2 and it
// stays.
func TestLangevinDamping(t *testing.T) {
	for _, perMove := range []float64{0, 0.1} {
		p := newLangevin(t, func(q *LangevinRoundParams) { handParams(q); q.Prior, q.DampingPerMove = 3600, perMove })
		steps := []struct {
			v, k float64
			want []float64
		}{
			{1, 2, []float64{0, 1}},
			{10, 9.5, []float64{0, 1}},
			{10, 8.5, []float64{1, 0}},
			{8.5, 10, map[bool][]float64{true: {0, 1}, false: {1, 0}}[perMove == 0]},
		}
		for k, st := range steps {
			x := allocate(t, p, langevinState([]int{2, 2}, [][]float64{{st.v, st.k}}, nil))
			checkX(t, "step "+string(rune('0'+k)), x, st.want)
		}
		if want := map[bool]int{true: 2, false: 1}[perMove == 0]; p.Moves() != want {
			t.Fatalf("per-move damping %v: %d moves, want %d", perMove, p.Moves(), want)
		}
	}
}

// TestLangevinTokens bounds preemptions. One type of 2 GPUs (no speed
// term: every job is on its fastest type) runs jobs 0 and 1; they then
// have 36000 and 72000 GPU-s attained (energies, at service weight 1,
// ln 11 and ln 21) when jobs 2 and 3 arrive with none (0): both gaps are
// above the 0.1 (+0.01 per recent move) threshold. With 2 tokens both running jobs are
// preempted. With 1 (MaxMoves 1, 0.001 tokens/s, half-life 3600 s), job 2
// (first of the tie) preempts job 1, the lowest priority, and job 3 waits.
// 1000 s later the balance is 0.001·3600/ln 2·(1 - 2^(-1000/3600)) = 0.909,
// no whole token, and nothing changes; 1000 s after that it is
// 0.909·2^(-1000/3600) + 0.909 = 1.659 and job 3 preempts job 0.
func TestLangevinTokens(t *testing.T) {
	state := func(now float64, n int) *RoundState {
		s := roundState(1, []int{2}, ones(n, 1), nil)
		s.Time = now
		att := []float64{36000, 72000, 0, 0}
		for i := range s.Jobs {
			s.Jobs[i].Attained = att[i]
		}
		return s
	}
	two := newLangevin(t, func(q *LangevinRoundParams) { handParams(q); q.Service, q.MaxMoves = 1, 2 })
	checkX(t, "start", allocate(t, two, state(0, 2)), []float64{1, 1})
	checkX(t, "2 tokens", allocate(t, two, state(0, 4)), []float64{0, 0, 1, 1})

	one := newLangevin(t, func(q *LangevinRoundParams) {
		handParams(q)
		q.Service, q.MaxMoves, q.TokenRate, q.TokenHalfLife = 1, 1, 0.001, 3600
	})
	checkX(t, "start", allocate(t, one, state(0, 2)), []float64{1, 1})
	checkX(t, "1 token", allocate(t, one, state(0, 4)), []float64{1, 0, 1, 0})
	checkX(t, "0.909 tokens", allocate(t, one, state(1000, 4)), []float64{1, 0, 1, 0})
	if b := one.tok.bal[0]; math.Abs(b-0.001*3600/math.Ln2*(1-math.Exp2(-1000.0/3600))) > 1e-9 {
		t.Fatalf("balance %v after 1000 s", b)
	}
	checkX(t, "1.659 tokens", allocate(t, one, state(2000, 4)), []float64{0, 0, 1, 1})
	if one.Moves() != 2 {
		t.Fatalf("%d moves, want 2", one.Moves())
	}
	// Below the threshold there is no preemption whatever the tokens:
	// attained 360 GPU-s is ln 1.1 = 0.095 above a new job.
	low := newLangevin(t, func(q *LangevinRoundParams) { handParams(q); q.Service = 1 })
	s := state(0, 2)
	allocate(t, low, s)
	s = state(0, 3)
	s.Jobs[0].Attained, s.Jobs[1].Attained = 360, 360
	checkX(t, "below threshold", allocate(t, low, s), []float64{1, 1, 0})
}

// TestLangevinDeterminism: the same seed gives the same allocations at a
// high temperature; another seed gives a different one on some state.
func TestLangevinDeterminism(t *testing.T) {
	mk := func(seed uint64) *LangevinRound {
		p := newLangevin(t, func(q *LangevinRoundParams) { q.Temperature = 1 })
		p.Seed(seed)
		return p
	}
	a, b, c := mk(7), mk(7), mk(8)
	rng := rand.New(rand.NewPCG(3, 4))
	differ := false
	for k := range 30 {
		s := randomRoundState(rng, float64(k)*600)
		xa, xb, xc := allocate(t, a, s), allocate(t, b, s), allocate(t, c, s)
		for i := range xa {
			if xa[i] != xb[i] {
				t.Fatalf("state %d: same seed, different x", k)
			}
			differ = differ || xa[i] != xc[i]
		}
	}
	if !differ {
		t.Fatal("seeds 7 and 8 gave the same 30 allocations at temperature 1")
	}
}

// randomRoundState is 1-3 types of 1-16 GPUs and 0-40 jobs of scale 1, 2,
// 4 or 8 (at most the largest type), some unable to run on some types, in
// ID order with gaps, so that jobs come and go between calls.
func randomRoundState(rng *rand.Rand, now float64) *RoundState {
	nt := 1 + rng.IntN(3)
	s := &RoundState{Time: now, Types: []string{"v100", "p100", "k80"}[:nt]}
	big := 0
	for range nt {
		c := 1 + rng.IntN(16)
		s.Capacity = append(s.Capacity, c)
		big = max(big, c)
	}
	id := 0
	for range rng.IntN(41) {
		id += 1 + rng.IntN(2)
		sc := 1 << rng.IntN(4)
		for sc > big {
			sc /= 2
		}
		s.Jobs = append(s.Jobs, RoundJob{ID: id, Scale: sc, Arrival: now - rng.Float64()*3600, Attained: rng.Float64() * 7200, Priority: 1})
		for range nt {
			v := 0.0
			if rng.IntN(5) > 0 {
				v = 0.1 + 10*rng.Float64()
			}
			s.Throughput = append(s.Throughput, v)
		}
	}
	return s
}

// evolve is the next state of a run: a third of the jobs finish, up to 10
// arrive (ID after the last), the others keep their scale and throughputs
// and gain attained service.
func evolve(rng *rand.Rand, s *RoundState, now float64) *RoundState {
	nt := len(s.Types)
	n := &RoundState{Time: now, Types: s.Types, Capacity: s.Capacity}
	big, id := slices.Max(s.Capacity), 0
	for i, jb := range s.Jobs {
		id = jb.ID
		if rng.IntN(3) == 0 {
			continue
		}
		jb.Attained += rng.Float64() * 3600
		n.Jobs = append(n.Jobs, jb)
		n.Throughput = append(n.Throughput, s.Throughput[i*nt:(i+1)*nt]...)
	}
	for range rng.IntN(11) {
		id++
		sc := 1 << rng.IntN(4)
		for sc > big {
			sc /= 2
		}
		n.Jobs = append(n.Jobs, RoundJob{ID: id, Scale: sc, Arrival: now, Priority: 1})
		for range nt {
			v := 0.0
			if rng.IntN(5) > 0 {
				v = 0.1 + 10*rng.Float64()
			}
			n.Throughput = append(n.Throughput, v)
		}
	}
	return n
}

// TestLangevinProperties: over random runs the allocation passes the
// safety check, changes at most MaxMoves running jobs per call, and leaves
// no free type that a waiting job fits (the greedy pass is
// work-conserving).
func TestLangevinProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, temp := range []float64{0, 0.5} {
		p := newLangevin(t, func(q *LangevinRoundParams) { q.Temperature, q.MaxMoves, q.TokenRate, q.Wait = temp, 3, 1, 0.5 })
		prev := map[int]int{}
		s := randomRoundState(rng, 0)
		total := 0
		for k := range 300 {
			if k%50 == 0 {
				s = randomRoundState(rng, float64(k)*1920) // a new cluster
				p = newLangevin(t, func(q *LangevinRoundParams) { q.Temperature, q.MaxMoves, q.TokenRate, q.Wait = temp, 3, 1, 0.5 })
				prev = map[int]int{}
			} else {
				s = evolve(rng, s, float64(k)*1920)
			}
			x := allocate(t, p, s)
			if err := checkGangAllocation(s, x); err != nil {
				t.Fatal(err)
			}
			nt := len(s.Types)
			free := append([]int(nil), s.Capacity...)
			now := map[int]int{}
			changed := 0
			for i, jb := range s.Jobs {
				for j := range nt {
					if x[i*nt+j] == 1 {
						now[jb.ID] = j
						free[j] -= jb.Scale
					}
				}
				if c, ok := prev[jb.ID]; ok {
					if d, ok := now[jb.ID]; !ok || d != c {
						changed++
					}
				}
			}
			if changed > 3 {
				t.Fatalf("state %d: %d running jobs changed, max 3", k, changed)
			}
			total += changed
			for i, jb := range s.Jobs {
				if _, ok := now[jb.ID]; ok {
					continue
				}
				for j := range nt {
					if s.Throughput[i*nt+j] > 0 && jb.Scale <= free[j] {
						t.Fatalf("state %d: job %d waits with %d %s GPUs free", k, jb.ID, free[j], s.Types[j])
					}
				}
			}
			prev = now
		}
		if total == 0 {
			t.Fatalf("temperature %v: no running job ever changed", temp)
		}
	}
}

// TestLangevinSafetyCheck: the barrier rejects partial gangs, two types,
// a type the job cannot run on and overcommitted capacity.
func TestLangevinSafetyCheck(t *testing.T) {
	s := langevinState([]int{2, 1}, [][]float64{{1, 1}, {1, 0}}, nil)
	s.Jobs[0].Scale = 2
	for _, c := range []struct {
		x    []float64
		want string
	}{
		{[]float64{1, 0, 0, 0}, ""},
		{[]float64{0.5, 0, 0, 0}, "not a whole gang"},
		{[]float64{1, 1, 0, 0}, "capacity 1"},
		{[]float64{0, 0, 0, 1}, "cannot run"},
		{[]float64{1, 0, 1, 0}, "3 GPUs of type v100"},
	} {
		err := checkGangAllocation(s, c.x)
		if c.want == "" {
			if err != nil {
				t.Fatalf("%v: %v", c.x, err)
			}
			continue
		}
		if !errors.Is(err, errGangAllocation) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%v: error %v, want %q", c.x, err, c.want)
		}
	}
	s.Jobs[0].Scale = 1
	s.Jobs[1].Scale = 2
	s.Jobs[1].Attained = 0
	x := []float64{1, 1, 0, 0}
	if err := checkGangAllocation(s, x); err == nil || !strings.Contains(err.Error(), "on 2 types") {
		t.Fatalf("two types: %v", err)
	}
}

// TestLangevinParams rejects out-of-range parameters, through the
// constructor and at the first allocation.
func TestLangevinParams(t *testing.T) {
	if err := DefaultLangevinRoundParams.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mod  func(*LangevinRoundParams)
		want string
	}{
		{func(q *LangevinRoundParams) { q.Temperature = -1 }, "temperature -1"},
		{func(q *LangevinRoundParams) { q.Speed = math.NaN() }, "NaN or infinite"},
		{func(q *LangevinRoundParams) { q.Pressure = -0.5 }, "pressure -0.5"},
		{func(q *LangevinRoundParams) { q.ServiceScale = 0 }, "service scale 0"},
		{func(q *LangevinRoundParams) { q.DampingPerMove = -1 }, "damping per move -1"},
		{func(q *LangevinRoundParams) { q.MaxMoves = -1 }, "max moves -1"},
		{func(q *LangevinRoundParams) { q.TokenHalfLife = math.Inf(1) }, "NaN or infinite"},
		{func(q *LangevinRoundParams) { q.Beta = 2 }, "beta 2"},
		{func(q *LangevinRoundParams) { q.Window = 1 }, "window 1"},
	} {
		prm := DefaultLangevinRoundParams
		c.mod(&prm)
		if _, err := NewLangevinRound(prm); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%+v: error %v, want %q", prm, err, c.want)
		}
		p := &LangevinRound{P: prm}
		s := langevinState([]int{1, 1}, [][]float64{{1, 1}}, nil)
		if err := p.Allocate(s, make([]float64, 2)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("Allocate with %+v: error %v, want %q", prm, err, c.want)
		}
	}
}

// TestLangevinSetParam: the tuning interface sets fields by name, rejects
// unknown names, non-integer counts and out-of-range values (keeping the
// parameters), and refuses changes after the first allocation.
func TestLangevinSetParam(t *testing.T) {
	pol, err := NewAllocationPolicy("langevin", []PolicyParam{{"temperature", 0.2}, {"max-moves", 3}, {"prior", 7200}})
	if err != nil {
		t.Fatal(err)
	}
	p := pol.(*LangevinRound)
	want := DefaultLangevinRoundParams
	want.Temperature, want.MaxMoves, want.Prior = 0.2, 3, 7200
	if p.P != want {
		t.Fatalf("params %+v, want %+v", p.P, want)
	}
	for _, c := range []struct {
		name string
		v    float64
		want string
	}{
		{"temp", 1, `unknown parameter "temp" (known: beta, chi0, d-max, damping,`},
		{"window", 2.5, "window 2.5 must be an integer"},
		{"beta", 0, "beta 0 in (0, 1]"},
		{"speed", -1, "speed -1"},
	} {
		if err := p.SetParam(c.name, c.v); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("SetParam(%s, %v): %v, want %q", c.name, c.v, err, c.want)
		}
	}
	if p.P != want {
		t.Fatalf("rejected values changed the params: %+v", p.P)
	}
	allocate(t, p, langevinState([]int{1, 1}, [][]float64{{1, 1}}, nil))
	if err := p.SetParam("temperature", 0); err == nil || !strings.Contains(err.Error(), "after the first allocation") {
		t.Fatalf("SetParam after Allocate: %v", err)
	}
}

// BenchmarkLangevinAllocate allocates 400 jobs (gangs of 1-8) on Gavel's
// 36:36:36 cluster at the default parameters, 1920 s apart, after one
// call that sizes the buffers: the steady state allocates nothing.
func BenchmarkLangevinAllocate(b *testing.B) {
	p := NewLangevinRoundDefault()
	p.Seed(0)
	benchAllocate(b, p)
}
