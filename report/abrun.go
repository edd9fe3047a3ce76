package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tegrl/tegrl/env"
)

// SeedWorkloads returns the workload of each seed of a comparison on c:
// a synthetic workload is drawn per seed; a trace is the same for every
// seed (the seed then drives failures and scheduler randomness), so it is
// read once, here.
func SeedWorkloads(c *env.Cluster, ws env.WorkloadSpec) (func(seed uint64) (*env.Workload, error), error) {
	if ws.Source == "synthetic" {
		return func(seed uint64) (*env.Workload, error) {
			w := ws
			w.Seed = seed
			return w.Load(c)
		}, nil
	}
	w, err := ws.Load(c)
	if err != nil {
		return nil, err
	}
	return func(uint64) (*env.Workload, error) { return w, nil }, nil
}

// Runs is the number of simulations RunAB makes: A and B on every seed,
// and every reference not named like A or B (those reuse their runs).
func (cfg *ABConfig) Runs() int {
	runs := 2 * len(cfg.Seeds)
	for _, r := range cfg.Reference {
		if r.Name != cfg.A.Name && r.Name != cfg.B.Name {
			runs += len(cfg.Seeds)
		}
	}
	return runs
}

// WriteABFiles writes a comparison into dir (created if needed):
// report.json (js, WriteABJSON's bytes), the PNG plots and report.md
// (headed by commandLine). It returns the number of files written.
func WriteABFiles(dir string, res *ABResult, js []byte, commandLine string) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), js, 0o644); err != nil {
		return 0, err
	}
	plots, err := WriteABPlots(dir, res)
	if err != nil {
		return 0, err
	}
	var md bytes.Buffer
	if err := WriteABMarkdown(&md, &res.Report, commandLine, plots); err != nil {
		return 0, fmt.Errorf("report.md: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.md"), md.Bytes(), 0o644); err != nil {
		return 0, err
	}
	return 2 + len(plots), nil
}
