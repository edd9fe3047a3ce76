package report

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/env"
)

func TestParseGrid(t *testing.T) {
	g, err := ParseGrid("temperature=0.01,0.05; place-candidates=8 ;controller=0,1")
	if err != nil {
		t.Fatal(err)
	}
	want := []SweepParam{{"temperature", []float64{0.01, 0.05}}, {"place-candidates", []float64{8}}, {"controller", []float64{0, 1}}}
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("grid %+v, want %+v", g, want)
	}
	for spec, msg := range map[string]string{
		"":                       "no parameters",
		"temperature":            "is not name=v1,v2",
		"temperature=abc":        `value "abc" is not a number`,
		"nosuch=1":               `unknown TEG parameter "nosuch"`,
		"place-candidates=2.5":   "wants an integer",
		"controller=2":           "wants 0 or 1",
		"temperature=0.1;w-cpu=": "is not name=v1,v2",
	} {
		if _, err := ParseGrid(spec); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseGrid(%q) = %v, want an error containing %q", spec, err, msg)
		}
	}
}

// TestRunSweep runs a 2-point grid on 2 seeds of a small cluster: the
// result does not depend on the number of workers, points are sorted by
// mean reward, each point's runs carry its seeds, and the grid values
// really reach the simulation (with moves off no job migrates; on, some do).
func TestRunSweep(t *testing.T) {
	c, err := env.NewSyntheticCluster(60, 3)
	if err != nil {
		t.Fatal(err)
	}
	wcfg := env.DefaultWorkload
	wcfg.Horizon = 1800
	base := env.GovernorTEG("langevin")
	base.Mobility = 0.05
	base.MigrationCost = 0
	cfg := SweepConfig{
		Cluster:   c,
		Workload:  func(seed uint64) (*env.Workload, error) { return env.NewSyntheticWorkload(c, wcfg, seed) },
		Scheduler: "langevin",
		Base:      base,
		Grid:      []SweepParam{{"moves", []float64{0, 1}}},
		Seeds:     []uint64{4, 5},
		Sim:       env.SimConfig{Duration: 1800, MTBF: -1},
	}
	cfg.Workers = 1
	one, err := RunSweep(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Workers = 2
	two, err := RunSweep(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(one, two) {
		t.Fatal("sweep results depend on the number of workers")
	}
	if len(one) != 2 {
		t.Fatalf("%d points, want 2", len(one))
	}
	a, _ := one[0].Objective()
	b, _ := one[1].Objective()
	if a < b {
		t.Errorf("points not sorted by objective: %v then %v", a, b)
	}
	for _, p := range one {
		if len(p.Runs) != 2 || p.Runs[0].Seed != 4 || p.Runs[1].Seed != 5 {
			t.Fatalf("point %v: runs %d with seeds %d, %d", p.Params, len(p.Runs), p.Runs[0].Seed, p.Runs[1].Seed)
		}
		moved := p.Runs[0].Migrations + p.Runs[1].Migrations
		if p.Params[0] == 0 && moved != 0 {
			t.Errorf("moves=0 point migrated %d jobs", moved)
		}
		if p.Params[0] == 1 && moved == 0 {
			t.Errorf("moves=1 point migrated nothing: the grid value did not reach the run")
		}
	}
	var md bytes.Buffer
	if err := WriteSweep(&md, cfg.Grid, one, 0, true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(md.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "| rank | moves | reward |") || !strings.HasPrefix(lines[1], "|---:|") ||
		!strings.HasPrefix(lines[2], "| 1 | ") {
		t.Errorf("markdown table:\n%s", md.String())
	}
	if _, err := RunSweep(context.Background(), SweepConfig{}); err == nil {
		t.Error("empty sweep config accepted")
	}
}
