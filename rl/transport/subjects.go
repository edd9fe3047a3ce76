package transport

import (
	"fmt"
	"strconv"
)

// MaxRunIDLen is the longest run id.
const MaxRunIDLen = 64

// ValidateRunID reports whether run is a valid run id: 1 to 64 characters of
// [A-Za-z0-9_-], so that it is one NATS subject token and a valid JetStream
// bucket name part. Errors wrap ErrBadRunID.
func ValidateRunID(run string) error {
	if len(run) == 0 || len(run) > MaxRunIDLen {
		return fmt.Errorf("%w %q: %d characters, want 1 to %d", ErrBadRunID, run, len(run), MaxRunIDLen)
	}
	for i := 0; i < len(run); i++ {
		if !runIDByte(run[i]) {
			return fmt.Errorf("%w %q: character %q at %d, want [A-Za-z0-9_-]", ErrBadRunID, run, run[i], i)
		}
	}
	return nil
}

// validateRunID is ValidateRunID on bytes, without allocating when valid.
func validateRunID(run []byte) error {
	if len(run) == 0 || len(run) > MaxRunIDLen {
		return fmt.Errorf("%w %q: %d characters, want 1 to %d", ErrBadRunID, run, len(run), MaxRunIDLen)
	}
	for i, c := range run {
		if !runIDByte(c) {
			return fmt.Errorf("%w %q: character %q at %d, want [A-Za-z0-9_-]", ErrBadRunID, run, c, i)
		}
	}
	return nil
}

func runIDByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// Subjects are the NATS subjects of one run.
type Subjects struct {
	Traj   string // tegrl.<run>.traj: actor -> learner trajectory segments
	Params string // tegrl.<run>.params: learner -> actors parameters
	Stats  string // tegrl.<run>.stats: actor statistics (JSON)
}

// SubjectsFor returns the subjects of run (which must be valid).
func SubjectsFor(run string) Subjects {
	p := "tegrl." + run + "."
	return Subjects{Traj: p + "traj", Params: p + "params", Stats: p + "stats"}
}

// ParamsBucket is the JetStream object store bucket holding the run's large
// parameter sets, one object per version (ObjectName).
func ParamsBucket(run string) string { return "tegrl-" + run + "-params" }

// LatestBucket is the JetStream key-value bucket whose key LatestKey holds
// the frame of the run's newest parameters (a params or a pointer frame), for
// actors that connect late.
func LatestBucket(run string) string { return "tegrl-" + run + "-latest" }

// LatestKey is the key of the newest parameters in LatestBucket.
const LatestKey = "params"

// ObjectName is the object store name of the parameters of version v.
func ObjectName(v uint64) string { return "v" + strconv.FormatUint(v, 10) }
