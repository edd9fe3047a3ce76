package datasets

import (
	"context"
	"strings"
	"testing"
)

func TestFetchDefaultDir(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "")
	_, err := FetchDefault(context.Background(), "all", FetchOptions{})
	if err == nil || !strings.HasPrefix(err.Error(), "--dir: no user cache folder (") || !strings.HasSuffix(err.Error(), "); pass --dir") {
		t.Errorf("no cache folder: %v", err)
	}
	_, err = FetchDefault(context.Background(), "no-such-dataset", FetchOptions{Dir: t.TempDir()})
	if err == nil || strings.HasPrefix(err.Error(), "--dir") {
		t.Errorf("given --dir, unknown dataset: %v, want Fetch's error", err)
	}
}
