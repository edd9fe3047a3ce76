package main

import (
	"cmp"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

func init() { addCommand(newVersionCmd) }

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print tegrl's version: module version, commit, build time and Go version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintf(a.stdout, "tegrl %s\n", versionString())
			return nil
		},
	}
}

// versionString describes the binary from its build information: the
// module version ("(devel)" for a build from a checkout), the commit and
// its time with "modified" when the tree had changes, and the Go version
// and platform.
func versionString() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown) " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	}
	v := cmp.Or(info.Main.Version, "(devel)")
	vcs := map[string]string{}
	for _, s := range info.Settings {
		vcs[s.Key] = s.Value
	}
	parts := []string{v}
	if rev := vcs["vcs.revision"]; rev != "" {
		var extra []string
		if at := vcs["vcs.time"]; at != "" {
			extra = append(extra, at)
		}
		if vcs["vcs.modified"] == "true" {
			extra = append(extra, "modified")
		}
		c := "commit " + rev[:min(12, len(rev))]
		if len(extra) > 0 {
			c += " (" + strings.Join(extra, ", ") + ")"
		}
		parts = append(parts, c)
	}
	return strings.Join(append(parts, info.GoVersion, runtime.GOOS+"/"+runtime.GOARCH), " ")
}
