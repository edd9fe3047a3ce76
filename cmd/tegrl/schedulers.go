package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/tegrl/tegrl/env"
)

// policyLoader builds a scheduler from a policy file (a learned policy or a
// distilled student). Packages that can load a kind of policy register a
// loader from an init function; the rest of the commands never ask which
// kind of scheduler they have.
type policyLoader struct {
	// match reports whether spec names a file this loader reads.
	match func(spec string) bool
	// load returns a constructor of fresh scheduler instances (one per
	// concurrent run: schedulers keep per-run caches).
	load func(spec string) (func() env.Scheduler, error)
}

var policyLoaders []policyLoader

// schedulerFactory resolves spec, a built-in scheduler name (see
// env.SchedulerNames) or a policy file, to a constructor of fresh
// instances. Policy files are read once here.
func schedulerFactory(spec string) (func() env.Scheduler, error) {
	if _, err := env.NewScheduler(spec); err == nil {
		return func() env.Scheduler { s, _ := env.NewScheduler(spec); return s }, nil
	}
	for _, l := range policyLoaders {
		if l.match(spec) {
			f, err := l.load(spec)
			if err != nil {
				return nil, fmt.Errorf("scheduler %q: %w", spec, err)
			}
			return f, nil
		}
	}
	if strings.ContainsAny(spec, `/\`) || strings.HasPrefix(spec, ".") {
		// A path: say what is wrong with it rather than "unknown scheduler".
		if st, err := os.Stat(spec); err != nil {
			return nil, fmt.Errorf("scheduler %q: no such file or folder (a policy file, or a train output folder holding policy.safetensors)", spec)
		} else if st.IsDir() {
			return nil, fmt.Errorf("scheduler %q: the folder holds no policy.safetensors", spec)
		}
		return nil, fmt.Errorf("scheduler %q: not a policy file (want NAME.safetensors or a train output folder)", spec)
	}
	return nil, fmt.Errorf("unknown scheduler %q (built-in: %s; or a policy file)", spec, strings.Join(env.SchedulerNames, ", "))
}
