package rl

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
)

// SaturationSchedulers parses a scheduler list of the saturation
// experiment (tegrl saturate --scheduler): built-in names (or "all") and
// policy files (a saturation policy of tegrl train --preset saturate, or
// any policy). It returns the names, built-ins first, and the constructor
// report.RunSaturation calls by name.
func SaturationSchedulers(spec string) ([]string, func(string) (env.Scheduler, error), error) {
	var names, builtin []string
	factories := map[string]func() env.Scheduler{}
	for name := range strings.SplitSeq(spec, ",") {
		name = strings.TrimSpace(name)
		if name == "all" || name == "" || slices.Contains(env.SchedulerNames, name) {
			builtin = append(builtin, name)
			continue
		}
		mk, err := SchedulerFactory(name)
		if err == nil {
			err = CheckSchedulerFit(name, EnvSaturate, 0, nil)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("scheduler list %q: %w", spec, err)
		}
		if _, dup := factories[name]; dup {
			return nil, nil, fmt.Errorf("scheduler list %q: %q named twice", spec, name)
		}
		factories[name] = mk
	}
	if len(builtin) > 0 {
		b, err := report.ParseSchedulers(strings.Join(builtin, ","))
		if err != nil {
			return nil, nil, err
		}
		names = b
	}
	// Policies after the built-ins, in the order given.
	for name := range strings.SplitSeq(spec, ",") {
		if name = strings.TrimSpace(name); factories[name] != nil && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names, func(name string) (env.Scheduler, error) {
		if mk := factories[name]; mk != nil {
			return mk(), nil
		}
		return env.NewScheduler(name)
	}, nil
}
