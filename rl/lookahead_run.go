package rl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
)

// LookaheadRun is tegrl lookahead as its command line gives it: the
// clairvoyant one-step rollout of Base (LookaheadSeeds) on each seed.
type LookaheadRun struct {
	Base  string `flag:"base" default:"langevin" usage:"scheduler improved upon: a built-in name or a policy file"`
	Seeds string // a list for report.ParseSeeds
	// Source is each seed's cluster, workload and run, with Source.Seed
	// replaced by the seed.
	Source env.SourceSpec
	// TEG gives the run's TEG settings under a fresh Base scheduler.
	TEG        func(env.Scheduler) (env.TEGConfig, error)
	Candidates int
	Workers    int     `flag:"workers" usage:"simulations at once (seeds, then each seed's rollouts); 0 = GOMAXPROCS"`
	Every      int     `flag:"every" default:"1" usage:"evaluate every n-th decision (the others follow the base)"`
	Support    float64 `flag:"support" usage:"try only the base's choice and candidates with at least this probability under the governor's placement distribution (0: all)"`
	JSON       bool    `flag:"json" usage:"print one JSON object (base, every, candidates, support, seeds: one object per seed)"`
}

// RunLookahead checks r, runs it and prints the table (WriteLookaheadTable)
// or the JSON object (base, every, candidates, support, seeds) to w.
func RunLookahead(ctx context.Context, r LookaheadRun, w io.Writer) error {
	if r.Every < 1 || r.Candidates < 2 || !(r.Support >= 0 && r.Support <= 1) {
		return fmt.Errorf("--every must be >= 1, --candidates >= 2 and --support in [0, 1]")
	}
	mk, err := SchedulerFactory(r.Base)
	if err != nil {
		return fmt.Errorf("--base: %w", err)
	}
	ss, err := report.ParseSeeds(r.Seeds)
	if err != nil {
		return fmt.Errorf("--seeds: %w", err)
	}
	if r.Workers <= 0 {
		r.Workers = runtime.GOMAXPROCS(0)
	}
	build := func(seed uint64) (*env.Cluster, *env.Workload, env.SimConfig, error) {
		src := r.Source
		src.Seed = seed
		c, w, cfg, err := src.Build(nil)
		if err != nil {
			return c, w, cfg, err
		}
		t, err := r.TEG(mk())
		cfg.TEG = &t
		return c, w, cfg, err
	}
	rows, err := LookaheadSeeds(ctx, build, mk, ss, LookaheadConfig{Every: r.Every, Candidates: r.Candidates, Support: r.Support}, r.Workers)
	if err != nil {
		return err
	}
	if r.JSON {
		return json.NewEncoder(w).Encode(map[string]any{"base": r.Base, "every": r.Every, "candidates": r.Candidates, "support": r.Support, "seeds": rows})
	}
	return WriteLookaheadTable(w, r.Base, rows)
}
