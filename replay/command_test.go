package replay

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/env"
)

// builtin resolves built-in scheduler names, as rl.SchedulerFactory does.
func builtin(spec string) (func() env.Scheduler, error) {
	if _, err := env.NewScheduler(spec); err != nil {
		return nil, err
	}
	return func() env.Scheduler { s, _ := env.NewScheduler(spec); return s }, nil
}

// TestCommand: a replay under the recorded scheduler reproduces and
// prints its report; a bad --limit, --governor, --scheduler or --diff is
// refused by its flag's name.
func TestCommand(t *testing.T) {
	dir, _ := record(t, "bestfit")
	c := Command{Trace: dir, Scheduler: "bestfit", Limit: 20, Governor: "own", JSON: true,
		NewScheduler: builtin, Logger: slog.New(slog.DiscardHandler)}
	var out bytes.Buffer
	if err := c.Run(context.Background(), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.HasPrefix(out.String(), "{") {
		t.Fatalf("output: %s", out.String())
	}
	for _, tc := range []struct {
		set  func(*Command)
		want string
	}{
		{func(c *Command) { c.Limit = -1 }, "--limit -1: want 0 (all) or more"},
		{func(c *Command) { c.Governor = "x" }, "--governor: "},
		{func(c *Command) { c.Scheduler = "nope" }, "--scheduler: "},
		{func(c *Command) { c.Diff = "nope" }, "--diff: "},
	} {
		bad := c
		tc.set(&bad)
		if err := bad.Run(context.Background(), &out); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("err = %v, want %q...", err, tc.want)
		}
	}
}
