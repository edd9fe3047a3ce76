package rl

import (
	"fmt"
	"log/slog"
	"strconv"
)

// The environments a policy can be trained for and applied to.
const (
	// EnvCluster is the cluster simulation (tegrl simulate, ab, dataset
	// record, serve): the small preset and every policy whose features
	// are the cluster featurizer's.
	EnvCluster = "cluster"
	// EnvSaturate is the FGD saturation experiment (tegrl saturate): the
	// saturate preset's policies (PolicyConfig.Features
	// FeaturesSaturation), whose candidates and features are the
	// experiment's own.
	EnvSaturate = "saturate"
)

// MetaMachines is the policy file metadata key of the synthetic cluster's
// machine count a cluster policy was trained on, written by tegrl train
// when it is not the small preset's SmallMachines (a file without it and
// with tegrl.preset "small" was trained on SmallMachines).
const MetaMachines = "tegrl.machines"

// metaPreset is the preset tegrl train names in a policy file.
const metaPreset = "tegrl.preset"

// ScaleWarnFactor is how far the machine count may move from the one a
// policy was trained on before PolicyFit.Check warns: a larger change puts
// the policy's per-machine statistics (load, candidate scores) outside
// what it saw in training.
const ScaleWarnFactor = 4

// PolicyFit is where a policy fits: the environment it was trained for,
// read from its configuration (the feature layout it was built with), and
// the machines of its training cluster when the file says (0: unknown).
// The observation layout itself is checked by PolicyMeta (schema hash and
// feature counts): a policy of another layout is refused before this.
type PolicyFit struct {
	Env      string
	Machines int
}

// FitOf returns the fit of a policy of configuration cfg with file
// metadata meta. Files written before MetaMachines existed are read by
// their preset.
func FitOf(cfg PolicyConfig, meta map[string]string) PolicyFit {
	f := PolicyFit{Env: EnvCluster}
	if cfg.Features == FeaturesSaturation {
		return PolicyFit{Env: EnvSaturate}
	}
	if n, err := strconv.Atoi(meta[MetaMachines]); err == nil && n > 0 {
		f.Machines = n
	} else if meta[metaPreset] == "small" {
		f.Machines = SmallMachines
	}
	return f
}

// Check refuses a policy applied to an environment it was not trained
// for, and warns (slog.Warn on log, when not nil) when machines is more
// than ScaleWarnFactor times larger or smaller than the machines it was
// trained on (machines 0, or an unknown training scale: no warning).
func (f PolicyFit) Check(env string, machines int, log *slog.Logger) error {
	if f.Env != env {
		return fmt.Errorf("policy trained for the %s, cannot schedule the %s (%s policies come from tegrl train --preset %s)",
			envTitle(f.Env), envTitle(env), env, presetOf(env))
	}
	if log != nil && machines > 0 && f.Machines > 0 && (machines > ScaleWarnFactor*f.Machines || ScaleWarnFactor*machines < f.Machines) {
		log.Warn("policy applied far from its training scale: expect decisions outside what it learned",
			"trained_machines", f.Machines, "machines", machines)
	}
	return nil
}

func envTitle(env string) string {
	if env == EnvSaturate {
		return "saturation experiment (tegrl saturate)"
	}
	return "cluster simulation (simulate, ab, dataset record, serve)"
}

func presetOf(env string) string {
	if env == EnvSaturate {
		return "saturate"
	}
	return "small"
}

// CheckSchedulerFit resolves spec (see ResolveScheduler) and, for a policy
// file, checks it against env and machines (PolicyFit.Check); built-in
// schedulers fit everywhere.
func CheckSchedulerFit(spec, env string, machines int, log *slog.Logger) error {
	src, err := ResolveScheduler(spec)
	if err != nil || src.Builtin {
		return err
	}
	_, meta, err := LoadPolicy(src.Payload)
	if err != nil {
		return fmt.Errorf("scheduler %q: %s: %w", spec, src.Path, err)
	}
	cfg, err := PolicyMeta(meta)
	if err != nil {
		return fmt.Errorf("scheduler %q: %s: %w", spec, src.Path, err)
	}
	if err := FitOf(cfg, meta).Check(env, machines, log); err != nil {
		return fmt.Errorf("scheduler %q: %s: %w", spec, src.Path, err)
	}
	return nil
}
