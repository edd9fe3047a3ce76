package env

import (
	"math"
	"math/rand/v2"
	"testing"
)

func wantX(t *testing.T, name string, x, want []float64) {
	t.Helper()
	for i := range want {
		if math.Abs(x[i]-want[i]) > 1e-9 {
			t.Fatalf("%s: x = %v, want %v", name, x, want)
		}
	}
}

func TestMinTotalDurationHand(t *testing.T) {
	// One GPU, two jobs at 1 step/s with 1 and 3 steps left: both finish
	// together at T = 4 s when they get 1/4 and 3/4 of it.
	s := round([]string{"v100"}, []int{1}, [][]float64{{1}, {1}})
	s.Jobs[0].StepsLeft, s.Jobs[1].StepsLeft = 1, 3
	x := make([]float64, 2)
	p := &MinTotalDuration{Perf: true}
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	wantX(t, "one type", x, []float64{0.25, 0.75})
	// A V100 and a K80: job 0 (2 and 1 steps/s, 2 steps left) and job 1 (1
	// and 1, 1 step left) both finish in 1 s only with job 0 on the V100 and
	// job 1 on the K80.
	s = round([]string{"v100", "k80"}, []int{1, 1}, [][]float64{{2, 1}, {1, 1}})
	s.Jobs[0].StepsLeft, s.Jobs[1].StepsLeft = 2, 1
	x = make([]float64, 4)
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	wantX(t, "two types", x, []float64{1, 0, 0, 1})
	// The agnostic variant believes job 0 runs 2 steps/s on the K80 too, so
	// either placement of job 0 looks as good to it and the LP's tie-break
	// keeps the same one; a job with no steps left gets nothing.
	s.Jobs[1].StepsLeft = 0
	q := &MinTotalDuration{}
	if err := q.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	if x[2] != 0 || x[3] != 0 || math.Abs(x[0]+x[1]-1) > 1e-9 {
		t.Fatalf("agnostic: x = %v, want job 0 full time, job 1 nothing", x)
	}
}

func TestMinTotalDurationMatchesGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	trials := 60
	if testing.Short() {
		trials = 25
	}
	for trial := range trials {
		s := randomRound(rng, 1+rng.IntN(10), 1+rng.IntN(3), trial%2 == 0)
		x := make([]float64, len(s.Throughput))
		p := &MinTotalDuration{Perf: true}
		if err := p.Allocate(s, x); err != nil {
			t.Fatal(err)
		}
		checkFeasible(t, s, x)
		nt := len(s.Types)
		coef := make([]float64, len(s.Throughput))
		scale := make([]int, len(s.Jobs))
		for i, job := range s.Jobs {
			scale[i] = job.Scale
			for j := range nt {
				coef[i*nt+j] = s.Throughput[i*nt+j] / job.StepsLeft
			}
		}
		m, n, a, b, c := maxMinLP(coef, scale, s.Capacity)
		want, _ := gonumMaxLE(t, m, n, a, b, c)
		if got := minLevel(s, coef, x); math.Abs(got-want) > 1e-6*want {
			t.Fatalf("trial %d: 1/T = %v, gonum %v", trial, got, want)
		}
	}
}

func TestFinishTimeFairnessHand(t *testing.T) {
	// One GPU, two jobs at 1 step/s, 1 and 3 steps left, at time 10; job 0
	// arrived at 0, job 1 at 10. Isolated share 1/2, so isolated times 2 and
	// 6. Ratios (10 + 1/u)/2 and (3/(1-u))/6 meet where 10u² - 8u - 1 = 0:
	// u = (4+√26)/10, ratio (6+√26)/2.
	s := round([]string{"v100"}, []int{1}, [][]float64{{1}, {1}})
	s.Time = 10
	s.Jobs[1].Arrival = 10
	s.Jobs[0].StepsLeft, s.Jobs[1].StepsLeft = 1, 3
	x := make([]float64, 2)
	p := &FinishTimeFairness{Perf: true}
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	u := (4 + math.Sqrt(26)) / 10
	wantX(t, "first round", x, []float64{u, 1 - u})
	if r := p.ratio(s, 0, x[:1]); math.Abs(r-(6+math.Sqrt(26))/2) > 1e-9 {
		t.Fatalf("ratio %v", r)
	}
	t.Logf("%d LPs", p.LPs)
	// A round later job 0 has done 0.5 of its step: that half step counts
	// 0.5/0.5 = 1 s of isolated time, so its isolated time stays 1 + 0.5/0.5
	// = 2. Now both jobs arrived at 0, time 20, steps 0.5 and 3: ratios
	// (20 + 0.5/u)/2 and (20 + 3/(1-u))/6.
	s.Time = 20
	s.Jobs[1].Arrival = 0
	s.Jobs[0].StepsLeft = 0.5
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	// (20 + 0.5/u)/2 = (20 + 3/(1-u))/6  ⇔  3(20 + 0.5/u) = 20 + 3/(1-u)
	// ⇔ 40u(1-u) + 1.5(1-u) = 3u ⇔ 40u² - 35.5u - 1.5 = 0.
	u = (35.5 + math.Sqrt(35.5*35.5+4*40*1.5)) / 80
	wantX(t, "second round", x, []float64{u, 1 - u})
}

func TestFinishTimeFairnessOptimal(t *testing.T) {
	// The policy's largest ratio ρ* is optimal: gonum's LP for the
	// throughputs ρ*(1+1e-7) needs is feasible, and for ρ*(1-1e-6) it is not.
	rng := rand.New(rand.NewPCG(11, 12))
	trials := 40
	if testing.Short() {
		trials = 15
	}
	for trial := range trials {
		s := randomRound(rng, 1+rng.IntN(8), 1+rng.IntN(3), trial%2 == 0)
		x := make([]float64, len(s.Throughput))
		p := &FinishTimeFairness{Perf: true}
		if err := p.Allocate(s, x); err != nil {
			t.Fatal(err)
		}
		checkFeasible(t, s, x)
		nt := len(s.Types)
		rho := 0.0
		for i := range s.Jobs {
			rho = max(rho, p.ratio(s, i, x[i*nt:(i+1)*nt]))
		}
		scale := make([]int, len(s.Jobs))
		for i, job := range s.Jobs {
			scale[i] = job.Scale
		}
		level := func(r float64) float64 {
			coef := make([]float64, len(s.Throughput))
			for i, job := range s.Jobs {
				slack := r*p.iTim[i] - (s.Time - job.Arrival)
				for j := range nt {
					coef[i*nt+j] = s.Throughput[i*nt+j] * max(slack, 1e-12) / job.StepsLeft
				}
			}
			m, n, a, b, c := maxMinLP(coef, scale, s.Capacity)
			v, _ := gonumMaxLE(t, m, n, a, b, c)
			return v
		}
		if v := level(rho * (1 + 1e-7)); v < 1-1e-9 {
			t.Fatalf("trial %d: ratio %v not achievable (level %v)", trial, rho, v)
		}
		if v := level(rho * (1 - 1e-6)); v >= 1 {
			t.Fatalf("trial %d: ratio %v is not the smallest (level %v below it)", trial, rho, v)
		}
	}
}
