package env

import (
	"fmt"
	"math"
	"testing"
)

// gavelShipped is Gavel's average JCT (hours, jobs 4000-4999, 36:36:36,
// continuous-single), from the outputs saved in its repository's
// scheduler/notebooks/figures/evaluation/continuous_jobs.ipynb, rates 0.4
// to 6.0 jobs/h by 0.4; NaN where Gavel shows no point. Each is one run,
// seed 0.
var gavelShipped = map[string][]float64{
	"fifo":                  {17.58, 17.64, 17.70, 17.71, 18.32, 18.63, 18.62, 22.21, 24.25, 25.38, 44.28, 99.19, 151.67, math.NaN(), math.NaN()},
	"fifo_perf":             {15.31, 15.38, 15.42, 15.43, 15.45, 15.52, 15.68, 15.95, 16.39, 17.08, 18.19, 22.24, 56.69, 104.12, 150.04},
	"max_min_fairness":      {23.26, 23.33, 23.51, 23.57, 23.47, 23.43, 23.59, 23.59, 23.57, 23.49, 23.81, 35.79, 63.78, 95.99, math.NaN()},
	"max_min_fairness_perf": {17.58, 17.64, 17.67, 17.48, 16.95, 16.39, 16.04, 16.08, 16.38, 16.82, 17.48, 18.97, 22.02, 28.96, 41.23},
	"gandiva":               {17.58, 17.64, 17.68, 17.66, 17.61, 17.62, 17.69, 17.83, 18.14, 18.88, 25.65, 30.46, 34.32, 42.54, math.NaN()},
}

// gavelKnee is the first rate index whose JCT exceeds twice the rate-0.4
// value, -1 if none.
func gavelKnee(jct []float64) int {
	for k, v := range jct {
		if v > 2*jct[0] {
			return k
		}
	}
	return -1
}

// TestGavelReproduction runs the protocol with seed 0, as Gavel's shipped
// runs, for the five policies: every rate up to 4.0 within 10% of Gavel's
// average JCT, and the first rate whose JCT exceeds twice the rate-0.4
// value within one step (0.4 jobs/h) of Gavel's. Rates above 4.0 run only
// as far as the knee needs. About a minute on two cores: skipped under
// -short.
func TestGavelReproduction(t *testing.T) {
	if testing.Short() {
		t.Skip("full protocol runs")
	}
	tab, err := GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"fifo", "fifo_perf", "max_min_fairness", "max_min_fairness_perf", "gandiva"} {
		want := gavelShipped[p]
		paper := gavelKnee(want)
		var got []float64
		for k := range want {
			rate := 0.4 * float64(k+1)
			if k >= 10 && (gavelKnee(got) >= 0 || k > paper+1) {
				break
			}
			res, err := GavelRun{Policy: p, Rate: rate, Seed: 0}.Run(tab)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, res.AvgJCTHours)
			if k < 10 && !(math.Abs(res.AvgJCTHours-want[k]) <= 0.1*want[k]) {
				t.Errorf("%s at %.1f jobs/h: %.2f h, Gavel %.2f (%+.1f%%)", p, rate, res.AvgJCTHours, want[k], 100*(res.AvgJCTHours/want[k]-1))
			}
		}
		if knee := gavelKnee(got); knee < 0 || knee < paper-1 || knee > paper+1 {
			t.Errorf("%s: knee at rate index %d (%.1f jobs/h), Gavel's %.1f", p, knee, 0.4*float64(knee+1), 0.4*float64(paper+1))
		}
	}
}

// BenchmarkGavel times one protocol run (jobs 4000-4999 measured, seed 0).
func BenchmarkGavel(b *testing.B) {
	tab, err := GavelThroughputTable()
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range []string{"fifo", "fifo_perf", "max_min_fairness", "gandiva", "max_min_fairness_perf"} {
		if _, err := AllocationPolicyByName(p); err != nil {
			continue
		}
		for _, rate := range []float64{0.4, 2.0, 4.0} {
			b.Run(fmt.Sprintf("policy=%s/rate=%.1f", p, rate), func(b *testing.B) {
				b.ReportAllocs()
				var res RoundResult
				for b.Loop() {
					if res, err = (GavelRun{Policy: p, Rate: rate}).Run(tab); err != nil {
						b.Fatal(err)
					}
				}
				sec := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(float64(res.Rounds)/sec, "rounds/s")
				b.ReportMetric(float64(res.Jobs)/sec, "jobs/s")
			})
		}
	}
}
