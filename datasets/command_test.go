package datasets

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/env"
)

var quiet = slog.New(slog.DiscardHandler)

// TestGenCommand: gen writes its files and prints them with the counts,
// and a horizon that is not positive names --duration.
func TestGenCommand(t *testing.T) {
	g := DefaultGenCommand()
	g.Out, g.Machines, g.Duration, g.Logger = t.TempDir(), 20, "30m", quiet
	var out bytes.Buffer
	if err := g.Run(&out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[2], " usage samples") || !strings.HasPrefix(lines[2], "20 machines, ") {
		t.Fatalf("output:\n%s", out.String())
	}
	var ins bytes.Buffer
	if err := (InspectCommand{JSON: true}).Run(filepath.Join(g.Out, "jobs.arrow"), &ins); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ins.String(), "{") {
		t.Fatalf("inspect --json: %s", ins.String())
	}
	g.Duration = "0"
	if err := g.Run(&out); err == nil || err.Error() != `--duration "0": the workload needs a positive horizon` {
		t.Fatalf("err = %v", err)
	}
}

// TestRecordCommand: a record run takes its scheduler and cluster from
// the functions it is given, checks the scheduler against the cluster,
// refuses a negative --max-bytes and names --max-bytes when the cap stops
// the run.
func TestRecordCommand(t *testing.T) {
	c := testCluster(t, 30, 5)
	w := testWorkload(t, c, 1200, 5)
	r := DefaultRecordCommand()
	r.Scheduler, r.Out, r.Seed, r.Logger = "bestfit", t.TempDir(), 5, quiet
	r.Build = func() (*env.Cluster, *env.Workload, env.SimConfig, error) {
		cfg := env.DefaultSimConfig
		cfg.Duration = 1200
		return c, w, cfg, nil
	}
	r.NewScheduler = func(spec string) (func() env.Scheduler, error) {
		if _, err := env.NewScheduler(spec); err != nil {
			return nil, err
		}
		return func() env.Scheduler { s, _ := env.NewScheduler(spec); return s }, nil
	}
	var fit []int
	r.CheckFit = func(_ string, machines int) error { fit = append(fit, machines); return nil }
	var out bytes.Buffer
	if err := r.Run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	if len(fit) != 1 || fit[0] != 30 || !strings.Contains(out.String(), " transitions (bestfit, 30 machines, ") {
		t.Fatalf("fit %v, output:\n%s", fit, out.String())
	}
	rows, _ := readRows(t, filepath.Join(r.Out, "transitions.arrow"))
	if len(rows) == 0 {
		t.Fatal("no rows")
	}
	r.MaxBytes = -1
	if err := r.Run(context.Background(), &out); err == nil || err.Error() != "--max-bytes -1: want >= 0 (0: no cap)" {
		t.Fatalf("err = %v", err)
	}
	r.MaxBytes, r.Out = 1000, t.TempDir()
	if err := r.Run(context.Background(), &out); !errors.Is(err, ErrMaxBytes) || !strings.HasSuffix(err.Error(), "(raise --max-bytes, or shorten --duration)") {
		t.Fatalf("err = %v", err)
	}
}
