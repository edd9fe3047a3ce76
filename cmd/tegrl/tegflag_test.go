package main

import (
	"strings"
	"testing"
)

// Every command that simulates takes --teg, checks it before running, and
// applies it: with moves off, langevin migrates nothing.
func TestTEGFlagOnSimulatingCommands(t *testing.T) {
	for _, args := range [][]string{
		{"simulate", "--machines", "20", "--duration", "10m"},
		{"dataset", "record", "--machines", "20", "--duration", "10m", "--out", t.TempDir()},
		{"tune", "--machines", "20", "--duration", "10m", "--seeds", "1", "--grid", "temperature=0.1"},
		{"lookahead", "--machines", "20", "--duration", "10m", "--seeds", "1"},
		{"ab", "--b", "fgd", "--machines", "20", "--duration", "10m", "--seeds", "1-2"},
	} {
		_, _, err := run(t, append(args, "--teg", "tempreature=1", "--log-level", "warn")...)
		if err == nil || !strings.Contains(err.Error(), "unknown TEG parameter") {
			t.Errorf("%s --teg tempreature=1: %v, want an unknown-parameter error", args[0], err)
		}
	}
	grid := []string{"tune", "--scheduler", "langevin", "--machines", "60", "--load", "1.2", "--duration", "1h", "--seeds", "1", "--grid", "temperature=0.1", "--log-level", "warn"}
	on, _, err := run(t, grid...)
	if err != nil {
		t.Fatal(err)
	}
	off, _, err := run(t, append(grid, "--teg", "moves=off")...)
	if err != nil {
		t.Fatal(err)
	}
	last := func(table string) string { // the migrations column of the first row
		rows := strings.Split(strings.TrimSpace(table), "\n")
		f := strings.Fields(rows[1])
		return f[len(f)-1]
	}
	if last(off) != "0.00" || last(on) == "0.00" {
		t.Errorf("migrations: %s with moves on, %s with --teg moves=off\n%s\n%s", last(on), last(off), on, off)
	}
}
