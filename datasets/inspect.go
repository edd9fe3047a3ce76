package datasets

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/tegrl/tegrl/env"
)

// Summary describes a dataset file: what tegrl dataset inspect prints.
type Summary struct {
	File          string            `json:"file"`
	Kind          string            `json:"kind"`
	FormatVersion string            `json:"format_version"`
	SchemaHash    string            `json:"observation_schema_hash"`
	HashMatches   bool              `json:"observation_schema_hash_matches"` // equal to this build's
	Metadata      map[string]string `json:"metadata"`
	Fields        []FieldSummary    `json:"fields"`
	Rows          int64             `json:"rows"`
	Batches       int               `json:"batches"`
	Columns       []ColumnStats     `json:"columns"`
	// Valid reports whether the file passed its kind's reader (every
	// check); Error says why not.
	Valid bool   `json:"valid"`
	Error string `json:"error,omitempty"`
}

// FieldSummary is one column of the schema.
type FieldSummary struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
}

// ColumnStats summarises a numeric column (for list columns, all their
// items; booleans count as 0 and 1). Min, Mean and Max are over the
// finite values; NaNs and Infs are counted apart.
type ColumnStats struct {
	Name  string `json:"name"`
	Count int64  `json:"count"` // non-null values
	Nulls int64  `json:"nulls"`
	NaNs  int64  `json:"nans"`
	Infs  int64  `json:"infs"`
	// Finite counts the values Min, Mean and Max are over; they are 0
	// when it is.
	Finite int64   `json:"finite"`
	Min    float64 `json:"min"`
	Mean   float64 `json:"mean"`
	Max    float64 `json:"max"`
	sum    float64
}

func (s *ColumnStats) add(x float64) {
	switch {
	case math.IsNaN(x):
		s.NaNs++
		return
	case math.IsInf(x, 0):
		s.Infs++
		return
	}
	if s.Finite == 0 || x < s.Min {
		s.Min = x
	}
	if s.Finite == 0 || x > s.Max {
		s.Max = x
	}
	s.Finite++
	s.sum += x
}

// Inspect reads the file at path batch by batch and summarises it. A file
// that its kind's reader refuses is still summarised as far as it can be
// read, with Valid false and the reason in Error; the error return is for
// a file that cannot be read at all.
func Inspect(path string) (*Summary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	defer f.Close()
	name := filepath.Base(path)
	br, err := newBatchReader(name, f, "", nil, ReaderOptions{})
	if err != nil {
		return nil, err
	}
	defer br.close()
	s := &Summary{File: path, Kind: string(br.kind), Metadata: br.meta, FormatVersion: br.meta[MetaFormatVersion],
		SchemaHash: br.meta[MetaSchemaHash], Batches: br.NumBatches()}
	s.HashMatches = s.SchemaHash == env.ObservationSchemaHash()
	schema := br.fr.Schema()
	for _, fl := range schema.Fields() {
		s.Fields = append(s.Fields, FieldSummary{Name: fl.Name, Type: fl.Type.String(), Nullable: fl.Nullable})
	}
	stats := make([]*ColumnStats, schema.NumFields())
	for i, fl := range schema.Fields() {
		if numericType(fl.Type) {
			stats[i] = &ColumnStats{Name: fl.Name}
		}
	}
	var readErr error
	for {
		rec, err := br.nextBatch()
		if err == io.EOF {
			break
		}
		if err != nil {
			readErr = err
			break
		}
		s.Rows += rec.NumRows()
		for i, col := range rec.Columns() {
			if stats[i] != nil {
				accumulate(stats[i], col)
			}
		}
	}
	for _, st := range stats {
		if st != nil {
			if st.Finite > 0 {
				st.Mean = st.sum / float64(st.Finite)
			}
			s.Columns = append(s.Columns, *st)
		}
	}
	if readErr == nil {
		readErr = validate(path, Kind(s.Kind), s.SchemaHash)
	}
	s.Valid = readErr == nil
	if readErr != nil {
		s.Error = readErr.Error()
	}
	return s, nil
}

// validate runs the kind's reader over the whole file. Transitions are
// checked against the file's own hash: inspect reports a mismatch
// (HashMatches) rather than refusing to look.
func validate(path string, k Kind, hash string) error {
	switch k {
	case KindJobs:
		_, err := ReadWorkload(path, ReaderOptions{})
		return err
	case KindMachines:
		_, err := ReadCluster(path, ReaderOptions{})
		return err
	case KindUsage:
		r, err := OpenUsage(path, ReaderOptions{})
		if err != nil {
			return err
		}
		defer r.Close()
		for r.Next() {
		}
		return r.Err()
	case KindDLJobs:
		return validateDLJobs(path) // job type names not checked: no table
	case KindAllocations:
		r, err := OpenAllocations(path, ReaderOptions{})
		if err != nil {
			return err
		}
		defer r.Close()
		for r.Next() {
		}
		return r.Err()
	case KindTransitions:
		r, err := OpenTransitions(path, ReaderOptions{SchemaHash: hash})
		if err != nil {
			return err
		}
		defer r.Close()
		for r.Next() {
		}
		return r.Err()
	}
	return fmt.Errorf("%s: no %s in the schema metadata: not a tegrl dataset (%q)", filepath.Base(path), MetaKind, k)
}

func numericType(t arrow.DataType) bool {
	if l, ok := t.(*arrow.ListType); ok {
		t = l.Elem()
	}
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT32, arrow.FLOAT64, arrow.BOOL:
		return true
	}
	return false
}

func accumulate(s *ColumnStats, a arrow.Array) {
	if l, ok := a.(*array.List); ok {
		s.Nulls += int64(l.NullN())
		if l.Len() == 0 {
			return
		}
		lo, _ := l.ValueOffsets(0)
		_, hi := l.ValueOffsets(l.Len() - 1)
		child := array.NewSlice(l.ListValues(), lo, hi)
		defer child.Release()
		accumulate(s, child) // item nulls count as nulls too
		return
	}
	s.Nulls += int64(a.NullN())
	s.Count += int64(a.Len() - a.NullN())
	valid := func(i int) bool { return a.NullN() == 0 || a.IsValid(i) }
	each := func(n int, f func(i int) float64) {
		for i := 0; i < n; i++ {
			if valid(i) {
				s.add(f(i))
			}
		}
	}
	switch a := a.(type) {
	case *array.Int8:
		each(a.Len(), func(i int) float64 { return float64(a.Value(i)) })
	case *array.Int16:
		each(a.Len(), func(i int) float64 { return float64(a.Value(i)) })
	case *array.Int32:
		each(a.Len(), func(i int) float64 { return float64(a.Value(i)) })
	case *array.Int64:
		each(a.Len(), func(i int) float64 { return float64(a.Value(i)) })
	case *array.Uint8:
		each(a.Len(), func(i int) float64 { return float64(a.Value(i)) })
	case *array.Uint16:
		each(a.Len(), func(i int) float64 { return float64(a.Value(i)) })
	case *array.Uint32:
		each(a.Len(), func(i int) float64 { return float64(a.Value(i)) })
	case *array.Uint64:
		each(a.Len(), func(i int) float64 { return float64(a.Value(i)) })
	case *array.Float32:
		each(a.Len(), func(i int) float64 { return float64(a.Value(i)) })
	case *array.Float64:
		each(a.Len(), a.Value)
	case *array.Boolean:
		each(a.Len(), func(i int) float64 {
			if a.Value(i) {
				return 1
			}
			return 0
		})
	}
}

// SortedKeys returns m's keys in order (for printing metadata).
func SortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
