package env

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// candidatesRef is the candidate draw as first written, one machine at a
// time: draw, check, repeat. Candidates draws in rounds to overlap cache
// misses and must give the same machines from the same random stream.
func candidatesRef(v *TEGView, r *Request, d int, rng *rand.Rand, dst []int) ([]int, int) {
	s := v.sim.state
	cold := v.Field.Cold
	if r.GPUs > 0 {
		cold = v.Field.ColdGPU
	}
	pool := v.sim.eligible(r)
	start, draws := len(dst), 0
	for k := 0; k < 2*d && len(dst)-start < d; k++ {
		draws++
		var c int
		if k%2 == 0 && len(cold) > 0 {
			c = int(cold[rng.IntN(len(cold))])
		} else if pool == nil {
			c = rng.IntN(len(s.M))
		} else if len(pool) > 0 {
			c = int(pool[rng.IntN(len(pool))])
		} else {
			break
		}
		if !s.Admit(c, r) || slices.Contains(dst[start:], c) {
			continue
		}
		dst = append(dst, c)
	}
	return dst, draws
}

func TestCandidatesMatchOneAtATime(t *testing.T) {
	sim := warmSim(t, 300, 1.3, "langevin") // overloaded: many refusals and second rounds
	sim.obs.State = sim.state
	sim.view.refresh()
	v := &sim.view
	jobs := sim.w.Jobs
	short, second := 0, 0
	for i := 0; i < 3000; i++ {
		j := &jobs[(i*7919)%len(jobs)]
		r := sim.state.Request(j)
		for _, d := range []int{1, 4, 16} {
			seed := uint64(i*31 + d)
			ra, rb := rand.New(rand.NewPCG(seed, 1)), rand.New(rand.NewPCG(seed, 1))
			want, wantDraws := candidatesRef(v, &r, d, ra, []int{-5})
			got := v.Candidates(&r, d, rb, []int{-5})
			if !slices.Equal(got, want) || v.Draws != wantDraws {
				t.Fatalf("job %d d=%d: got %v (%d draws), want %v (%d draws)", j.ID, d, got, v.Draws, want, wantDraws)
			}
			if ra.Uint64() != rb.Uint64() {
				t.Fatalf("job %d d=%d: the random streams diverged", j.ID, d)
			}
			if len(got)-1 < d {
				short++
			}
			if wantDraws > d {
				second++
			}
		}
	}
	// The comparison must have covered refusals and second rounds.
	if short == 0 || second == 0 {
		t.Fatalf("no short candidate sets (%d) or second rounds (%d): the test does not exercise them", short, second)
	}
	t.Logf("%d short candidate sets, %d decisions with a second round", short, second)
}
