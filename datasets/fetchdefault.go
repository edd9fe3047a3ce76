package datasets

import (
	"context"
	"fmt"
)

// FetchDefault is Fetch into opts.Dir, or into DefaultCacheDir when
// opts.Dir is empty; an error finding that folder names tegrl dataset
// fetch's --dir.
func FetchDefault(ctx context.Context, name string, opts FetchOptions) ([]Fetched, error) {
	if opts.Dir == "" {
		var err error
		if opts.Dir, err = DefaultCacheDir(); err != nil {
			return nil, fmt.Errorf("--dir: %w; pass --dir", err)
		}
	}
	return Fetch(ctx, name, opts)
}
