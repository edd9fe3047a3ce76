package report

import (
	"cmp"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version describes the running binary from its build information, so
// that a result can be traced to the code that made it: the module
// version ("(devel)" for a build from a checkout), the commit and its time
// with "modified" when the tree had changes, and the Go version and
// platform.
func Version() string {
	info, ok := debug.ReadBuildInfo()
	return versionOf(info, ok)
}

func versionOf(info *debug.BuildInfo, ok bool) string {
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
