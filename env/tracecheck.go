package env

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// CheckTraceFile checks a trace table spec of the saturation experiment
// (alibaba-gpu, the bundled copy, or alibaba-gpu:FILE) before the long
// work starts, so that a missing file fails at once with a message naming
// flag and how to get the bundled trace.
func CheckTraceFile(flag, spec string) error {
	if spec == "alibaba-gpu" {
		return nil // the bundled copy
	}
	path := strings.TrimPrefix(spec, "alibaba-gpu:")
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s %s: no such file (leave %s out for the bundled trace)", flag, path, flag)
	case err != nil:
		return fmt.Errorf("%s: %w", flag, err)
	case st.IsDir():
		return fmt.Errorf("%s %s: is a directory, want the CSV file", flag, path)
	}
	return nil
}
