package rl

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tegrl/tegrl/env"
)

// PolicyFileName is the policy file a training output folder holds.
const PolicyFileName = "policy.safetensors"

// ReadPolicyFile reads a policy given as a .safetensors file or as the
// folder (a tegrl train or distill output) that holds PolicyFileName; it
// returns the bytes and the path read.
func ReadPolicyFile(spec string) (payload []byte, path string, err error) {
	path = spec
	if !strings.HasSuffix(spec, ".safetensors") {
		path = filepath.Join(spec, PolicyFileName)
	}
	payload, err = os.ReadFile(path)
	return payload, path, err
}

// SchedulerSource is what a scheduler spec names: a built-in scheduler of
// env, or a policy file read into memory.
type SchedulerSource struct {
	// Spec is the spec as given; schedulers built from it carry it as their
	// name, so a policy file's metrics rows read as its path.
	Spec string
	// Builtin reports that Spec is one of env.SchedulerNames.
	Builtin bool
	// Path and Payload are the policy file read, when not Builtin.
	Path    string
	Payload []byte
}

// ResolveScheduler resolves spec, a built-in scheduler name (see
// env.SchedulerNames) or a policy file (a .safetensors file, or a folder
// holding PolicyFileName), reading a policy file once. It does not check
// that the file holds a valid policy: SchedulerFactory does, and a service
// validates it its own way.
func ResolveScheduler(spec string) (SchedulerSource, error) {
	if _, err := env.NewScheduler(spec); err == nil {
		return SchedulerSource{Spec: spec, Builtin: true}, nil
	}
	payload, path, err := ReadPolicyFile(spec)
	if err == nil {
		return SchedulerSource{Spec: spec, Path: path, Payload: payload}, nil
	}
	switch st, serr := os.Stat(spec); {
	case strings.HasSuffix(spec, ".safetensors"):
		return SchedulerSource{}, fmt.Errorf("scheduler %q: %w", spec, err)
	case strings.ContainsAny(spec, `/\`) || strings.HasPrefix(spec, "."):
		// A path: say what is wrong with it rather than "unknown scheduler".
		if serr != nil {
			return SchedulerSource{}, fmt.Errorf("scheduler %q: no such file or folder (a policy file, or a train output folder holding %s)", spec, PolicyFileName)
		} else if st.IsDir() {
			return SchedulerSource{}, fmt.Errorf("scheduler %q: the folder holds no %s", spec, PolicyFileName)
		}
		return SchedulerSource{}, fmt.Errorf("scheduler %q: not a policy file (want NAME.safetensors or a train output folder)", spec)
	}
	return SchedulerSource{}, fmt.Errorf("unknown scheduler %q: not built in (%s) and not a readable policy file: %w",
		spec, strings.Join(env.SchedulerNames, ", "), err)
}

// SchedulerFactory resolves spec (see ResolveScheduler) and checks a
// policy file once; it returns a constructor of fresh instances. Each
// concurrent run needs its own (schedulers keep per-run caches): a policy
// gets its own copy of the network and runs greedily, the evaluation mode.
func SchedulerFactory(spec string) (func() env.Scheduler, error) {
	src, err := ResolveScheduler(spec)
	if err != nil {
		return nil, err
	}
	if src.Builtin {
		return func() env.Scheduler { sc, _ := env.NewScheduler(spec); return sc }, nil // checked by ResolveScheduler
	}
	if _, _, err := LoadPolicy(src.Payload); err != nil {
		return nil, fmt.Errorf("scheduler %q: %s: %w", spec, src.Path, err)
	}
	return func() env.Scheduler {
		p, _, _ := LoadPolicy(src.Payload) // checked above
		return NewScheduler(p, SchedulerConfig{Name: spec})
	}, nil
}

// SchedulerFactories resolves a comma-separated list of built-in names and
// policy files (or "all", every built-in) to their names and constructors.
func SchedulerFactories(s string) ([]string, []func() env.Scheduler, error) {
	names := strings.Split(s, ",")
	if s == "all" {
		names = env.SchedulerNames
	}
	var out []string
	var fs []func() env.Scheduler
	for _, name := range names {
		name = strings.TrimSpace(name)
		f, err := SchedulerFactory(name)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, name)
		fs = append(fs, f)
	}
	return out, fs, nil
}
