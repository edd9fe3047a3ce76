package env

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseSeconds(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		err  string
	}{
		{"90m", 5400, ""}, {"12.5", 12.5, ""}, {"0", 0, ""}, {"1h30m", 5400, ""},
		{"-1", 0, `duration "-1" is negative`}, {"-2h", 0, `duration "-2h" is negative`},
		{"soon", 0, `duration "soon": want a Go duration such as 6h or a number of seconds`},
	} {
		got, err := ParseSeconds(c.in)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("ParseSeconds(%q): %v, want error %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseSeconds(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func TestCheckTraceFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "nodes.csv")
	if err := os.WriteFile(file, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "none.csv")
	for _, c := range []struct{ spec, want string }{
		{"alibaba-gpu", ""}, {"alibaba-gpu:" + file, ""}, {file, ""},
		{"alibaba-gpu:" + missing, "--nodes " + missing + ": no such file (leave --nodes out for the bundled trace)"},
		{dir, "--nodes " + dir + ": is a directory, want the CSV file"},
	} {
		err := CheckTraceFile("--nodes", c.spec)
		if got := ""; err != nil {
			got = err.Error()
			if got != c.want {
				t.Errorf("CheckTraceFile(%q): %q, want %q", c.spec, got, c.want)
			}
		} else if c.want != "" {
			t.Errorf("CheckTraceFile(%q): nil, want %q", c.spec, c.want)
		}
	}
}

func TestSourceSpecBuild(t *testing.T) {
	s := SourceSpec{Machines: 12, Cluster: "synthetic", Workload: "synthetic", Duration: "30m", Tick: 5, Load: 0.5, Compress: 1, MTBF: -1, Seed: 3, Ticks: 7}
	var info strings.Builder
	c, w, cfg, err := s.Build(&info)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Machines) != 12 || len(w.Jobs) == 0 {
		t.Errorf("%d machines, %d jobs; want 12 machines and some jobs", len(c.Machines), len(w.Jobs))
	}
	if cfg.Duration != 1800 || cfg.Tick != 5 || cfg.MaxTicks != 7 || cfg.Seed != 3 || cfg.MTBF != -1 {
		t.Errorf("config %+v: want duration 1800, tick 5, 7 ticks, seed 3, mtbf -1", cfg)
	}
	if n := strings.Count(info.String(), "\n"); n != 1 {
		t.Errorf("info %q: %d lines, want the cluster's one", info.String(), n)
	}
	s.Duration = ""
	if _, _, cfg, err = s.Build(nil); err != nil || cfg.Duration != DefaultWorkload.Horizon {
		t.Errorf("no duration: %v s, %v; want the synthetic horizon %v s", cfg.Duration, err, DefaultWorkload.Horizon)
	}
	s.Cut = &TraceCut{ClusterSeed: 1, Window: "1h"}
	if _, _, _, err = s.Build(nil); err == nil || err.Error() != "--start and --window cut trace workloads; the synthetic workload has --duration" {
		t.Errorf("window on the synthetic workload: %v", err)
	}
	s.Duration = "later"
	s.Cut = nil
	if _, _, _, err = s.Build(nil); err == nil || !strings.Contains(err.Error(), `duration "later"`) {
		t.Errorf("bad duration: %v", err)
	}
}
