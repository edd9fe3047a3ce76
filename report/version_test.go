package report

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	plat := runtime.GOOS + "/" + runtime.GOARCH
	set := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, c := range []struct {
		info *debug.BuildInfo
		want string
	}{
		{&debug.BuildInfo{GoVersion: "go1.9"}, "(devel) go1.9 " + plat},
		{&debug.BuildInfo{GoVersion: "go1.9", Main: debug.Module{Version: "v1.2.3"},
			Settings: set("vcs.revision", "0123456789abcdef", "vcs.time", "2026-01-02T03:04:05Z", "vcs.modified", "true")},
			"v1.2.3 commit 0123456789ab (2026-01-02T03:04:05Z, modified) go1.9 " + plat},
		{&debug.BuildInfo{GoVersion: "go1.9", Settings: set("vcs.revision", "abc", "vcs.modified", "false")}, "(devel) commit abc go1.9 " + plat},
	} {
		if got := versionOf(c.info, true); got != c.want {
			t.Errorf("versionOf: %q, want %q", got, c.want)
		}
	}
	if got, want := versionOf(nil, false), "(unknown) "+runtime.Version()+" "+plat; got != want {
		t.Errorf("no build info: %q, want %q", got, want)
	}
}
