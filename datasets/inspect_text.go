package datasets

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/tegrl/tegrl/env"
)

// WriteText writes the summary for people (tegrl dataset inspect).
func (s *Summary) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "file:     %s\n", s.File)
	fmt.Fprintf(w, "kind:     %s (format version %s)\n", orNone(s.Kind), orNone(s.FormatVersion))
	match := "matches this build"
	if !s.HashMatches {
		match = "DIFFERS from this build's " + env.ObservationSchemaHash()
	}
	fmt.Fprintf(w, "hash:     %s (%s)\n", orNone(s.SchemaHash), match)
	fmt.Fprintf(w, "rows:     %d in %d batches\n", s.Rows, s.Batches)
	if s.Valid {
		fmt.Fprintln(w, "valid:    yes")
	} else {
		fmt.Fprintf(w, "valid:    NO: %s\n", s.Error)
	}
	fmt.Fprintln(w, "metadata:")
	for _, k := range SortedKeys(s.Metadata) {
		v := s.Metadata[k]
		if len(v) > 100 {
			v = fmt.Sprintf("%s... (%d bytes)", v[:100], len(v))
		}
		fmt.Fprintf(w, "  %s: %s\n", k, v)
	}
	fmt.Fprintln(w, "fields:")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, f := range s.Fields {
		null := ""
		if f.Nullable {
			null = "nullable"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", f.Name, f.Type, null)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "columns:")
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  name\tcount\tnulls\tNaNs\tmin\tmean\tmax\t")
	for _, c := range s.Columns {
		if c.Finite == 0 {
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t-\t-\t-\t\n", c.Name, c.Count, c.Nulls, c.NaNs)
			continue
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%.6g\t%.6g\t%.6g\t\n", c.Name, c.Count, c.Nulls, c.NaNs, c.Min, c.Mean, c.Max)
	}
	return tw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
