package datasets

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
)

// DefaultCacheDir is the cache folder of fetched traces: the user cache
// folder's tegrl/traces.
func DefaultCacheDir() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no user cache folder (%w)", err)
	}
	return filepath.Join(cache, "tegrl", "traces"), nil
}

// WriteFetched writes Fetch's outcome as a table, one file a line
// (nothing when got is empty).
func WriteFetched(w io.Writer, got []Fetched) {
	if len(got) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "file\tbytes\tsha256\tcheck\tpath")
	for _, f := range got {
		check := f.Check
		if f.Cached {
			check += " (cached)"
		}
		fmt.Fprintf(tw, "%s/%s\t%d\t%s\t%s\t%s\n", f.Dataset, f.File, f.Size, f.SHA256, check, f.Path)
	}
	tw.Flush()
}
