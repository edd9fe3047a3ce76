package report

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/env"
)

// capped is FIFO-perf on at most Jobs jobs at once: a policy with one
// parameter whose effect on JCT is known in sign (fewer jobs at once,
// longer waits).
type capped struct {
	env.FIFO
	jobs int
}

func (c *capped) Name() string { return "test_capped" }

func (c *capped) SetParam(name string, v float64) error {
	if name != "jobs" || v < 1 {
		return fmt.Errorf("unknown parameter %q or value %v (known: jobs >= 1)", name, v)
	}
	c.jobs = int(v)
	return nil
}

func (c *capped) Allocate(s *env.RoundState, x []float64) error {
	if err := c.FIFO.Allocate(s, x); err != nil {
		return err
	}
	nt, kept := len(s.Types), 0
	for i := range s.Jobs {
		row := x[i*nt : (i+1)*nt]
		any := false
		for _, v := range row {
			any = any || v > 0
		}
		if any {
			if kept++; kept > c.jobs {
				clear(row)
			}
		}
	}
	return nil
}

func init() {
	env.RegisterAllocationPolicy("test_capped", func() env.AllocationPolicy { return &capped{FIFO: env.FIFO{Perf: true}, jobs: 1 << 30} })
}

func TestTuneGPU(t *testing.T) {
	grid, err := ParseGPUGrid("jobs=4,1000", "test_capped")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][2]string{{"jobs=0", "test_capped"}, {"speed=1", "test_capped"}, {"jobs=1", "fifo"}, {"jobs=x", "test_capped"}, {"", "test_capped"}} {
		if _, err := ParseGPUGrid(bad[0], bad[1]); err == nil {
			t.Errorf("grid %q on %s: no error", bad[0], bad[1])
		}
	}
	run := GPURunConfig{Scenario: "gavel-single", Rate: 2.0, Policy: "test_capped"}
	pts, err := TuneGPU(context.Background(), run, grid, []uint64{0, 1}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 1000 jobs at once is plain fifo_perf at this load; 4 at once waits.
	if len(pts) != 2 || pts[0].Params[0].Value != 1000 || !(pts[0].AvgJCT < pts[1].AvgJCT) && pts[1].AtBound == 0 {
		t.Fatalf("ranking: %+v", pts)
	}
	ref, err := RunGPU(GPURunConfig{Scenario: "gavel-single", Rate: 2.0, Policy: "fifo_perf", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if *pts[0].Runs[1].AvgJCT != *ref.AvgJCT {
		t.Fatalf("jobs=1000 seed 1: %v h, fifo_perf %v h", *pts[0].Runs[1].AvgJCT, *ref.AvgJCT)
	}
	var b strings.Builder
	if err := WriteGPUTune(&b, grid, pts, 0); err != nil || !strings.Contains(b.String(), "1000") {
		t.Fatalf("%s %v", b.String(), err)
	}
}
