package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tegrl/tegrl/env"
)

// SeedsHelp describes the seeds grammar of every command's --seeds and
// --eval-seeds, for flag help.
const SeedsHelp = `a seed ("7": one seed), a range ("1-20") or a list ("3,5,8"; mixed: "1-3,10")`

// MaxSeeds bounds how many seeds one seed list may name, so that a typo such
// as "42-4200000" fails fast instead of running for days.
const MaxSeeds = 100000

// ParseSeeds parses a seed list: a single seed ("7"), an inclusive range
// ("42-51"), a comma-separated list ("42,43,50"), or a list mixing both
// ("1-3,10"). Seeds are unsigned decimal integers. The result is sorted
// ascending; a seed named twice, an empty item, a reversed range or more
// than MaxSeeds seeds is an error.
func ParseSeeds(spec string) ([]uint64, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("seed list is empty (want e.g. 7, 42-51 or 42,43,50)")
	}
	var seeds []uint64
	for item := range strings.SplitSeq(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("seed list %q: empty item", spec)
		}
		lo, hi := item, item
		if a, b, ok := strings.Cut(item, "-"); ok {
			lo, hi = strings.TrimSpace(a), strings.TrimSpace(b)
		}
		first, err := parseSeed(spec, lo)
		if err != nil {
			return nil, err
		}
		last, err := parseSeed(spec, hi)
		if err != nil {
			return nil, err
		}
		if last < first {
			return nil, fmt.Errorf("seed list %q: range %s runs backwards", spec, item)
		}
		if last-first >= MaxSeeds || len(seeds)+int(last-first+1) > MaxSeeds {
			return nil, fmt.Errorf("seed list %q: more than %d seeds", spec, MaxSeeds)
		}
		for s := first; ; s++ {
			seeds = append(seeds, s)
			if s == last {
				break
			}
		}
	}
	slices.Sort(seeds)
	for i := 1; i < len(seeds); i++ {
		if seeds[i] == seeds[i-1] {
			return nil, fmt.Errorf("seed list %q: seed %d named twice", spec, seeds[i])
		}
	}
	return seeds, nil
}

func parseSeed(spec, s string) (uint64, error) {
	if s == "" {
		return 0, fmt.Errorf("seed list %q: missing number in a range", spec)
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("seed list %q: %q is not a seed (want an unsigned integer)", spec, s)
	}
	return v, nil
}

// FormatSeeds writes seeds compactly, the inverse of ParseSeeds for a
// sorted list: runs of consecutive seeds become ranges ("42-51,60").
func FormatSeeds(seeds []uint64) string {
	var b strings.Builder
	for i := 0; i < len(seeds); {
		j := i
		for j+1 < len(seeds) && seeds[j+1] == seeds[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(seeds[i], 10))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.FormatUint(seeds[j], 10))
		}
		i = j + 1
	}
	return b.String()
}

// FGDSchedulers are the six policies of the FGD saturation protocol
// (docs/fgd.md), in the paper's order; "all" names them.
var FGDSchedulers = []string{"random", "bestfit", "dotprod", "packing", "clustering", "fgd"}

// ParseSchedulers parses a comma-separated list of scheduler names known to
// env.NewScheduler, or "all" for FGDSchedulers. Order is kept; an unknown
// or repeated name is an error.
func ParseSchedulers(spec string) ([]string, error) {
	if strings.TrimSpace(spec) == "all" {
		return slices.Clone(FGDSchedulers), nil
	}
	var names []string
	for name := range strings.SplitSeq(spec, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "":
			return nil, fmt.Errorf("scheduler list %q: empty name", spec)
		case name == "all":
			return nil, fmt.Errorf("scheduler list %q: \"all\" cannot be combined with other names", spec)
		case !slices.Contains(env.SchedulerNames, name):
			return nil, fmt.Errorf("scheduler list %q: unknown scheduler %q (have all, %s)", spec, name, strings.Join(env.SchedulerNames, ", "))
		case slices.Contains(names, name):
			return nil, fmt.Errorf("scheduler list %q: %q named twice", spec, name)
		}
		names = append(names, name)
	}
	return names, nil
}

// CommandLine joins argv into one line a POSIX shell reads back as the same
// arguments, quoting only the arguments that need it.
func CommandLine(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = shellQuote(a)
	}
	return strings.Join(out, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./,=:+@%", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
