package distill

import (
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
)

// recordedRounds are every 10th allocation round of the teacher's run on
// Gavel's single-GPU protocol at rate jobs/h (held-out seed 0), copied,
// with the table's pair throughputs.
func recordedRounds(b *testing.B, rate float64) []*env.RoundState {
	b.Helper()
	tab, err := env.GavelThroughputTable()
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(tailTeacher)
	if err != nil {
		b.Fatal(err)
	}
	teacher, err := env.ParseTieredPolicy(data)
	if err != nil {
		b.Fatal(err)
	}
	var out []*env.RoundState
	n := 0
	_, err = report.RunGPU(report.GPURunConfig{Scenario: "gavel-single", Rate: rate, Seed: 0, Policy: "teacher",
		New: func() env.AllocationPolicy { return teacher },
		OnAllocate: func(s *env.RoundState, _ []float64) {
			if n++; n%10 != 0 {
				return
			}
			c := &env.RoundState{Time: s.Time, Jobs: slices.Clone(s.Jobs), Types: slices.Clone(s.Types),
				Capacity: slices.Clone(s.Capacity), Throughput: slices.Clone(s.Throughput)}
			gs := make([]int, len(c.Types))
			for i, name := range c.Types {
				gs[i], _ = tab.GPU(name)
			}
			c.Pair = func(i, k, j int) (float64, float64, bool) {
				return tab.PairThroughput(c.Jobs[i].Type, c.Jobs[k].Type, gs[j], c.Jobs[i].Scale)
			}
			out = append(out, c)
		}})
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// studentFile is the committed distilled student of the tail file.
const studentFile = "../docs/policies/gavel-single-tiered-student.json"

// BenchmarkTieredStudent times one allocation of the tail file (the
// teacher), of its distilled student (docs/policies/
// gavel-single-tiered-student.json) and of that student priced
// (env.ColumnSupport.Price: the teacher's optimum) on the same recorded rounds of the
// teacher's runs at 6.2 jobs/h (a largest-gap rate, mostly below the student's
// load limit) and 7.0 jobs/h (near capacity, mostly past it); an op is
// one pass over the rounds, and us/alloc the mean time of one
// allocation.
func BenchmarkTieredStudent(b *testing.B) {
	for _, rate := range []string{"6.2", "7.0"} {
		b.Run(rate, func(b *testing.B) {
			r, _ := strconv.ParseFloat(rate, 64)
			rounds := recordedRounds(b, r)
			for k, f := range []string{tailTeacher, studentFile, studentFile} {
				data, err := os.ReadFile(f)
				if err != nil {
					b.Fatal(err)
				}
				p, err := env.ParseTieredPolicy(data)
				if err != nil {
					b.Fatal(err)
				}
				name := []string{"teacher", "student", "student-priced"}[k]
				for s := p.Support; k == 2 && s != nil; s = s.Above {
					s.Price = true
				}
				b.Run(name, func(b *testing.B) {
					x := make([]float64, 0, 3*1000)
					b.ReportAllocs()
					for b.Loop() {
						for _, s := range rounds {
							x = x[:len(s.Throughput)]
							if err := p.Allocate(s, x); err != nil {
								b.Fatal(err)
							}
						}
					}
					b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(rounds)), "us/alloc")
					b.ReportMetric(float64(len(rounds)), "rounds")
				})
			}
		})
	}
}
