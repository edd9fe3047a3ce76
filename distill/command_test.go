package distill

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestCommandChecks: the flags are checked before any work.
func TestCommandChecks(t *testing.T) {
	for _, c := range []struct {
		cmd  Command
		want string
	}{
		{Command{RunConfig: RunConfig{Out: "o"}}, "--teacher and --out are required"},
		{Command{RunConfig: RunConfig{Teacher: "t"}}, "--teacher and --out are required"},
		{Command{RunConfig: RunConfig{Teacher: "t", Out: "o"}, Seeds: "3-x"}, `seed list "3-x"`},
	} {
		var out bytes.Buffer
		err := c.cmd.Run(context.Background(), &out)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || out.Len() != 0 {
			t.Errorf("%+v: %v, printed %q; want %q...", c.cmd, err, out.String(), c.want)
		}
	}
}
