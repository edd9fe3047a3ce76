package report

import (
	"fmt"
	"testing"

	"github.com/tegrl/tegrl/env"
)

func TestFluidScratch(t *testing.T) {
	tab, _ := env.GavelThroughputTable()
	for _, sc := range []struct {
		s     HeadroomScenario
		seeds int
	}{
		{HeadroomScenario{Cluster: "spot", Sample: 16, Workload: "multi", Loads: []float64{0.6, 1.0}}, 10},
		{HeadroomScenario{Cluster: "spot", Sample: 16, Workload: "single", Loads: []float64{0.6, 1.0, 1.2}}, 10},
		{HeadroomScenario{Cluster: "spot", Sample: 1, Workload: "multi", Loads: []float64{0.6, 1.0}}, 6},
		{HeadroomScenario{Cluster: "spot", Sample: 1, Workload: "single", Loads: []float64{0.6, 1.0, 1.2}}, 6},
		{HeadroomScenario{Cluster: "gavel", Workload: "single", Rates: []float64{4.8, 5.8, 6.0, 6.2, 6.6, 6.8, 7.0, 7.4}}, 10},
		{HeadroomScenario{Cluster: "gavel", Workload: "multi", Rates: []float64{1.7, 2.0, 2.2, 2.4, 2.6}}, 10},
	} {
		p, err := prepare(sc.s, tab, env.BundledGPUModels(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, rate := range p.rates {
			for _, n := range []int{5, sc.seeds} {
				fl, fb, over := 0.0, 0.0, 0
				for seed := uint64(0); seed < uint64(n); seed++ {
					wl := p.wl
					wl.Rate, wl.Seed = rate, seed
					gen, _ := env.NewGavelGenerator(tab, wl)
					rc := p.roundConfig(0, 0, 0, rate, seed)
					var jobs []env.DLJob
					floor := 0.0
					for i := 0; i < rc.MeasureTo; i++ {
						j := gen.Next()
						if i >= rc.MeasureFrom {
							jobs = append(jobs, j)
							best := 0.0
							for _, g := range p.cluster.Types {
								best = max(best, p.cluster.Table.Throughput(j.Model, g, j.Scale, false))
							}
							floor += j.Steps / best / 3600
						}
					}
					f, err := env.FluidBoundHours(p.cluster, jobs, rate)
					if err != nil {
						over++
					}
					fl += floor / float64(len(jobs)) / float64(n)
					fb += f / float64(n)
				}
				fmt.Printf("%s rate %.3f seeds 0-%d floor %.3f fluid %.3f over %d\n", sc.s.Name(), rate, n-1, fl, fb, over)
			}
		}
	}
}
