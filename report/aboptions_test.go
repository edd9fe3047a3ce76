package report

import (
	"errors"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/env"
)

func TestABOptionsConfigErrors(t *testing.T) {
	resolve := func(spec string) (Contender, error) {
		if spec == "nope" {
			return Contender{}, errors.New("unknown scheduler")
		}
		return Contender{Name: spec}, nil
	}
	for _, tc := range []struct {
		name string
		set  func(*ABOptions)
		want string
	}{
		{"no b", func(o *ABOptions) { o.B = "" }, "--b is required: the scheduler or policy file to compare with --a langevin"},
		{"bad a", func(o *ABOptions) { o.A = "nope" }, "--a: unknown scheduler"},
		{"repeated ref", func(o *ABOptions) { o.Ref = "kube,kube" }, `--ref "kube,kube": empty or repeated name "kube"`},
		{"bad ref", func(o *ABOptions) { o.Ref = "nope" }, "--ref: unknown scheduler"},
		{"one seed", func(o *ABOptions) { o.Seeds = "1" }, "--seeds: "},
		{"series", func(o *ABOptions) { o.SeriesEvery = 0 }, "--series-every 0: want at least 1 tick"},
		{"resamples", func(o *ABOptions) { o.Resamples = 0 }, "--resamples 0: want at least 1"},
		{"level", func(o *ABOptions) { o.Level = 1 }, "--level 1: want a number in (0, 1), e.g. 0.95"},
		{"workers", func(o *ABOptions) { o.Workers = -1 }, "--workers -1: want 0 (GOMAXPROCS) or more"},
	} {
		o := DefaultABOptions()
		o.A, o.B, o.Ref, o.Resolve = "langevin", "fgd", "kube,bestfit", resolve
		tc.set(&o)
		_, err := o.Config()
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want prefix %q", tc.name, err, tc.want)
		}
	}
	o := DefaultABOptions()
	o.A, o.B, o.Ref, o.Resolve = "langevin", "fgd", " kube , bestfit", resolve
	cfg, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.A.Name != "langevin" || cfg.B.Name != "fgd" || len(cfg.Reference) != 2 || cfg.Reference[0].Name != "kube" || len(cfg.Seeds) != 20 {
		t.Errorf("config %+v", cfg)
	}
}

func TestTuneOptionsConfig(t *testing.T) {
	o := DefaultTuneOptions()
	if err := o.CheckGrid(); err == nil || !strings.HasPrefix(err.Error(), "--grid is required") {
		t.Errorf("no grid: err %v", err)
	}
	o.Scheduler, o.Grid, o.Machines, o.Duration = "langevin", "temperature=0.01,0.05", 20, "1h"
	var applied bool
	o.TEG = func(*env.TEGConfig) error { applied = true; return nil }
	tc, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	if !applied || tc.Runs() != 6 || len(tc.Cluster.Machines) != 20 || tc.Duration != 3600 {
		t.Errorf("applied %v, runs %d, machines %d, duration %v", applied, tc.Runs(), len(tc.Cluster.Machines), tc.Duration)
	}
}

func TestGPUScenarioRun(t *testing.T) {
	given := func(names ...string) func(string) bool {
		return func(f string) bool {
			for _, n := range names {
				if n == f {
					return true
				}
			}
			return false
		}
	}
	run := GPURunConfig{Scenario: "gavel-single"}
	for _, tc := range []struct {
		changed func(string) bool
		rate    float64
		want    string
	}{
		{given("machines"), 1, "--machines has no meaning with --scenario (a GPU training cluster)"},
		{given("load"), 1, "--rate and --load both set the arrival rate: give one"},
		{given(), 0, "--scenario gavel-single: give --rate (jobs per hour) or --load (offered GPU load)"},
	} {
		r := run
		r.Rate = tc.rate
		if _, err := GPUScenarioRun(tc.changed, r, 0.5); err == nil || err.Error() != tc.want {
			t.Errorf("err %v, want %q", err, tc.want)
		}
	}
	got, err := GPUScenarioRun(given("load"), run, 0.5)
	if err != nil || got.Load != 0.5 {
		t.Errorf("load: %+v, %v", got, err)
	}
	if p, err := GPUPolicy("", false); p != "fifo_perf" || err != nil {
		t.Errorf("default policy %q, %v", p, err)
	}
}
