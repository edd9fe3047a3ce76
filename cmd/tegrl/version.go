package main

import (
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
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	parts := []string{v}
	if rev != "" {
		c := "commit " + rev[:min(12, len(rev))]
		var extra []string
		if at != "" {
			extra = append(extra, at)
		}
		if modified {
			extra = append(extra, "modified")
		}
		if len(extra) > 0 {
			c += " (" + strings.Join(extra, ", ") + ")"
		}
		parts = append(parts, c)
	}
	parts = append(parts, info.GoVersion, runtime.GOOS+"/"+runtime.GOARCH)
	return strings.Join(parts, " ")
}
