package rl

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/tegrl/tegrl/env"
)

// EvalRun is one scheduler on one seed.
type EvalRun struct {
	Scheduler string
	Seed      uint64
	Metrics   env.Metrics
}

// EvalEntry names a scheduler to evaluate: New builds a fresh instance per
// run and TEG is the governor configuration it runs under (nil: the
// simulator's default for its name, so langevin gets its controller).
type EvalEntry struct {
	Name string
	New  func() env.Scheduler
	TEG  *env.TEGConfig
}

// Evaluate runs every entry on every seed of src (episodes of duration
// seconds) over GOMAXPROCS workers and returns the runs in entry-major,
// seed-minor order. Same inputs, same results.
func Evaluate(ctx context.Context, src Source, duration float64, seeds []uint64, entries []EvalEntry) ([]EvalRun, error) {
	runs := make([]EvalRun, len(entries)*len(seeds))
	errs := make([]error, len(runs))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range jobs {
				e, seed := entries[k/len(seeds)], seeds[k%len(seeds)]
				c, w, err := src(seed)
				if err != nil {
					errs[k] = err
					continue
				}
				sim, err := env.NewSim(c, w, e.New(), env.SimConfig{Seed: seed, Duration: duration, TEG: e.TEG})
				if err != nil {
					errs[k] = err
					continue
				}
				runs[k] = EvalRun{Scheduler: e.Name, Seed: seed, Metrics: sim.Run()}
			}
		}()
	}
	for k := range runs {
		if ctx.Err() != nil {
			break
		}
		jobs <- k
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for k, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("evaluate %s seed %d: %w", entries[k/len(seeds)].Name, seeds[k%len(seeds)], err)
		}
	}
	return runs, nil
}

// PolicyEntry evaluates a trained policy greedily under LearnedTEG. Each
// run gets its own copy of the network (schedulers are not shared between
// concurrent runs).
func PolicyEntry(name string, payload []byte) (EvalEntry, error) {
	if _, _, err := LoadPolicy(payload); err != nil {
		return EvalEntry{}, err
	}
	teg := LearnedTEG()
	return EvalEntry{Name: name, TEG: &teg, New: func() env.Scheduler {
		p, _, _ := LoadPolicy(payload) // checked above
		return NewScheduler(p, SchedulerConfig{Name: name})
	}}, nil
}

// BuiltinEntry evaluates a built-in scheduler under its own governor.
func BuiltinEntry(name string) (EvalEntry, error) {
	if _, err := env.NewScheduler(name); err != nil {
		return EvalEntry{}, err
	}
	return EvalEntry{Name: name, New: func() env.Scheduler { s, _ := env.NewScheduler(name); return s }}, nil
}
