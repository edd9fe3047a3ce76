package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/tegrl/tegrl/env"
)

// tegFlag is the --teg flag: TEG parameter assignments ("temperature=0.1,
// moves=off"), by the names tegrl tune's --grid uses (env.TEGConfig.Set),
// checked when the flag is parsed. Commands declare it with addTEGFlag and
// apply it with apply (over any base) or forSched (over a scheduler's
// governor, as tegrl simulate runs it).
type tegFlag struct{ set env.TEGSettings }

// addTEGFlag declares --teg on fs and returns its value.
func addTEGFlag(fs *pflag.FlagSet) *tegFlag {
	t := &tegFlag{}
	fs.Var(t, "teg", "TEG parameters over the scheduler's governor, name=value,... (switches take on/off); names: "+
		strings.Join(env.TEGParamNames(), ", "))
	return t
}

// apply sets the flag's assignments on dst.
func (t *tegFlag) apply(dst *env.TEGConfig) error { return t.set.Apply(dst) }

// forSched is s's governor with the flag's assignments applied.
func (t *tegFlag) forSched(s env.Scheduler) (env.TEGConfig, error) {
	c := env.GovernorFor(s)
	return c, t.set.Apply(&c)
}

// Set parses and appends one --teg value (the flag may be repeated).
func (t *tegFlag) Set(s string) error {
	v, err := env.ParseTEGSettings(s)
	t.set = append(t.set, v...)
	return err
}

func (t *tegFlag) String() string { return t.set.String() }
func (t *tegFlag) Type() string   { return "name=value,..." }
