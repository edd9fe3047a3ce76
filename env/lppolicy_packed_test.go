package env

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// pairTable gives co-located throughputs by job type: pt[a][b] is what a job
// of type a runs at beside one of type b (<= 0: cannot share).
func pairTable(s *RoundState, pt [][]float64) {
	s.Pair = func(i, k, j int) (float64, float64, bool) {
		a, b := s.Jobs[i].Type, s.Jobs[k].Type
		if s.Jobs[i].Scale != s.Jobs[k].Scale || pt[a][b] <= 0 || pt[b][a] <= 0 {
			return 0, 0, false
		}
		return pt[a][b] * s.Throughput[i*len(s.Types)+j], pt[b][a] * s.Throughput[k*len(s.Types)+j], true
	}
}

func TestMaxMinPackedHand(t *testing.T) {
	// One GPU, two jobs of one type at 1 step/s alone and 0.8 each when
	// sharing: alone they reach 1/2 each, together 0.8 — the pair takes the
	// GPU all the time.
	s := round([]string{"v100"}, []int{1}, [][]float64{{1}, {1}})
	pairTable(s, [][]float64{{0.8}})
	x := make([]float64, 2)
	p := &MaxMinFairnessPacked{}
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	wantX(t, "same type alone", x, []float64{0, 0})
	ps := p.Pairs(s)
	if len(ps) != 1 || ps[0].A != 0 || ps[0].B != 1 || math.Abs(ps[0].X[0]-1) > 1e-9 {
		t.Fatalf("pairs %+v, want 0+1 all the time", ps)
	}
	// Two job types: A runs 0.9 beside B, B 0.6 beside A. With B alone a
	// share b of the GPU and the pair 1-b: λ = min(0.9(1-b), b + 0.6(1-b)),
	// equal at b = 3/13, λ = 9/13.
	s = round([]string{"v100"}, []int{1}, [][]float64{{1}, {1}})
	s.Jobs[1].Type = 1
	pairTable(s, [][]float64{{0, 0.9}, {0.6, 0}})
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	wantX(t, "two types alone", x, []float64{0, 3.0 / 13})
	ps = p.Pairs(s)
	if len(ps) != 1 || math.Abs(ps[0].X[0]-10.0/13) > 1e-9 {
		t.Fatalf("pairs %+v, want 0+1 for 10/13", ps)
	}
	// Without a pair table it is max-min fairness with Gavel's packing
	// normalisation: half the GPU each.
	s.Pair = nil
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	wantX(t, "no pairs", x, []float64{0.5, 0.5})
	if len(p.Pairs(s)) != 0 {
		t.Fatal("pairs without a pair table")
	}
}

// packedLevels returns each job's normalised throughput under x and pairs.
func packedLevels(s *RoundState, x []float64, ps []RoundPair) ([]float64, []float64) {
	nt := len(s.Types)
	idx := map[int]int{}
	for i, j := range s.Jobs {
		idx[j.ID] = i
	}
	lv := make([]float64, len(s.Jobs))
	time := make([]float64, len(s.Jobs))
	used := make([]float64, nt)
	norm := func(i int) float64 {
		sum := 0.0
		for j := range nt {
			sum += s.Throughput[i*nt+j]
		}
		return float64(s.Jobs[i].Scale) / (s.Jobs[i].Priority * sum)
	}
	for i := range s.Jobs {
		for j := range nt {
			lv[i] += x[i*nt+j] * s.Throughput[i*nt+j] * norm(i)
			time[i] += x[i*nt+j]
			used[j] += x[i*nt+j] * float64(s.Jobs[i].Scale)
		}
	}
	for _, p := range ps {
		a, b := idx[p.A], idx[p.B]
		for j := range nt {
			if p.X[j] == 0 {
				continue
			}
			ta, tb, _ := s.Pair(a, b, j)
			lv[a] += p.X[j] * ta * norm(a)
			lv[b] += p.X[j] * tb * norm(b)
			time[a] += p.X[j]
			time[b] += p.X[j]
			used[j] += p.X[j] * float64(s.Jobs[a].Scale)
		}
	}
	return lv, append(time, used...)
}

func TestMaxMinPackedMatchesGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for trial := range 40 {
		s := randomRound(rng, 1+rng.IntN(6), 1+rng.IntN(2), trial%2 == 0)
		types := 0
		for _, j := range s.Jobs {
			types = max(types, j.Type+1)
		}
		pt := make([][]float64, types)
		for a := range pt {
			pt[a] = make([]float64, types)
			for b := range pt[a] {
				if rng.IntN(4) > 0 {
					pt[a][b] = 0.3 + 0.7*rng.Float64()
				}
			}
		}
		pairTable(s, pt)
		nt := len(s.Types)
		x := make([]float64, len(s.Throughput))
		p := &MaxMinFairnessPacked{}
		if err := p.Allocate(s, x); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		ps := p.Pairs(s)
		lv, use := packedLevels(s, x, ps)
		nj := len(s.Jobs)
		for i := range nj {
			if use[i] > 1+1e-9 {
				t.Fatalf("trial %d: job %d busy %v of the time", trial, i, use[i])
			}
		}
		for j := range nt {
			if use[nj+j] > float64(s.Capacity[j])+1e-9 {
				t.Fatalf("trial %d: type %d uses %v of %d GPUs", trial, j, use[nj+j], s.Capacity[j])
			}
		}
		got := math.Inf(1)
		for _, v := range lv {
			got = min(got, v)
		}
		// The job-level LP: alone x[i,j], pairs z[(i,k),j], then λ.
		type col struct{ i, k, j int }
		var cols []col
		for i := range nj {
			for j := range nt {
				if usable(s, i, j) {
					cols = append(cols, col{i, -1, j})
				}
			}
			for k := i + 1; k < nj; k++ {
				for j := range nt {
					if s.Jobs[i].Scale > s.Capacity[j] {
						continue
					}
					if ta, tb, ok := s.Pair(i, k, j); ok && ta > 0 && tb > 0 {
						cols = append(cols, col{i, k, j})
					}
				}
			}
		}
		n := len(cols) + 1
		m := 2*nj + nt
		a := make([]float64, m*n)
		b := make([]float64, m)
		c := make([]float64, n)
		c[n-1] = 1
		for i := range nj {
			a[i*n+n-1] = 1
			b[nj+i] = 1
		}
		for j := range nt {
			b[2*nj+j] = float64(s.Capacity[j])
		}
		norm := func(i int) float64 {
			sum := 0.0
			for j := range nt {
				sum += s.Throughput[i*nt+j]
			}
			return float64(s.Jobs[i].Scale) / (s.Jobs[i].Priority * sum)
		}
		for v, cl := range cols {
			sc := float64(s.Jobs[cl.i].Scale)
			a[(2*nj+cl.j)*n+v] = sc
			a[(nj+cl.i)*n+v] = 1
			if cl.k < 0 {
				a[cl.i*n+v] = -s.Throughput[cl.i*nt+cl.j] * norm(cl.i)
				continue
			}
			ta, tb, _ := s.Pair(cl.i, cl.k, cl.j)
			a[cl.i*n+v] = -ta * norm(cl.i)
			a[cl.k*n+v] = -tb * norm(cl.k)
			a[(nj+cl.k)*n+v] = 1
		}
		want, _ := gonumMaxLE(t, m, n, a, b, c)
		if math.Abs(got-want) > 1e-6*max(1, want) {
			t.Fatalf("trial %d (%d jobs): min level %v, gonum's job-level LP %v", trial, nj, got, want)
		}
	}
}

// TestMaxMinPackedTieDeficit: one V100 and two K80s. B (and D) run 1
// step/s on either at priority 2, so their normalised throughput is at
// most 1/4 and sets the max-min level; they reach it on a K80 each (on
// the V100 they would take it from jobs that gain four times more there).
// A and C run 4 on the V100 and 1 on a K80. With D, A and C have only the
// V100 left and each reaches 1/4 with 5/16 of it; without D each reaches
// it with 1/12 of the V100 and the rest of its time on the free K80.
// Either way any split of the rest of the V100 gives the same total, so
// the level leaves a tie, and with TieDeficit the job furthest behind
// running alone (no steps in an hour, deficit 1, against a new job's 0)
// takes all the V100 the other can spare: 11/16 or 11/12, either way
// round.
//
// The same states with every job a 2-GPU gang on twice the GPUs are the
// same LPs. Gangs are weighted only while the jobs ask for more GPUs
// than the cluster has: with D (8 GPUs asked of 6) as single jobs are,
// without D (6 of 6) not at all, Gavel's tie-break.
func TestMaxMinPackedTieDeficit(t *testing.T) {
	state := func(old, scale, jobs int) *RoundState {
		thr := [][]float64{{4, 1}, {1, 1}, {4, 1}, {1, 1}}[:jobs]
		s := round([]string{"v100", "k80"}, []int{scale, 2 * scale}, thr)
		s.Time = 3600
		for i := range s.Jobs {
			s.Jobs[i].Type, s.Jobs[i].Arrival, s.Jobs[i].Scale = i, 3600, scale
			if i%2 == 1 {
				s.Jobs[i].Priority = 2
			}
		}
		s.Jobs[old].Arrival = 0
		return s
	}
	for _, old := range []int{0, 2} {
		other := 2 - old
		for _, c := range []struct{ scale, jobs int }{{1, 4}, {1, 3}, {2, 4}} {
			x := make([]float64, 2*c.jobs)
			if err := (&MaxMinFairnessPacked{TieDeficit: 1}).Allocate(state(old, c.scale, c.jobs), x); err != nil {
				t.Fatal(err)
			}
			keep := 5.0 / 16
			if c.jobs == 3 {
				keep = 1.0 / 12
			}
			if math.Abs(x[old*2]-(1-keep)) > 1e-9 || math.Abs(x[other*2]-keep) > 1e-9 || math.Abs(x[1*2+1]-1) > 1e-9 {
				t.Fatalf("%d jobs of %d GPUs, job %d behind: x = %v, want V100 %v for it, %v for job %d, a K80 for job 1", c.jobs, c.scale, old, x, 1-keep, keep, other)
			}
		}
		weighted, gavel := make([]float64, 6), make([]float64, 6)
		if err := (&MaxMinFairnessPacked{TieDeficit: 1}).Allocate(state(old, 2, 3), weighted); err != nil {
			t.Fatal(err)
		}
		if err := (&MaxMinFairnessPacked{}).Allocate(state(old, 2, 3), gavel); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(weighted, gavel) {
			t.Fatalf("job %d behind, three 2-GPU gangs on six GPUs: x = %v with TieDeficit, %v without", old, weighted, gavel)
		}
	}
}
