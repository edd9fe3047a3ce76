package env

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// ParseError reports a malformed value in an input file: the file, the line
// (1-based, as an editor shows it), the column (1-based field number) and the
// column's name.
type ParseError struct {
	File   string
	Line   int
	Column int
	Name   string // column name; "" when the file has no header
	Err    error
}

func (e *ParseError) Error() string {
	col := strconv.Itoa(e.Column)
	if e.Name != "" {
		col += " (" + e.Name + ")"
	}
	if e.Column == 0 {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s:%d: column %s: %v", e.File, e.Line, col, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// table reads a CSV file row by row and converts fields with errors that
// name the file, line and column.
type table struct {
	file  string
	r     *csv.Reader
	names []string       // column names in file order
	index map[string]int // column name -> field index
	rec   []string
	line  int
}

// newTable opens a CSV stream. With a header, the required columns must be
// present (extra columns are ignored); without one, names gives the column
// order and every row must have exactly that many fields.
func newTable(file string, rd io.Reader, header bool, names []string) (*table, error) {
	r := csv.NewReader(rd)
	r.ReuseRecord = true
	t := &table{file: file, r: r, index: map[string]int{}}
	if !header {
		r.FieldsPerRecord = len(names)
		t.names = names
		for i, n := range names {
			t.index[n] = i
		}
		return t, nil
	}
	rec, err := r.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &ParseError{File: file, Line: 1, Err: errors.New("empty file: no header row")}
		}
		return nil, t.wrap(err)
	}
	r.FieldsPerRecord = len(rec)
	t.names = append([]string(nil), rec...)
	for i, n := range t.names {
		t.index[strings.TrimSpace(strings.TrimPrefix(n, "\ufeff"))] = i
	}
	for _, n := range names {
		if _, ok := t.index[n]; !ok {
			return nil, &ParseError{File: file, Line: 1, Err: fmt.Errorf("header lacks column %q (has %s)", n, strings.Join(t.names, ","))}
		}
	}
	return t, nil
}

// wrap converts encoding/csv errors to ParseErrors.
func (t *table) wrap(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &ParseError{File: t.file, Line: pe.Line, Column: pe.Column, Err: pe.Err}
	}
	return fmt.Errorf("%s: %w", t.file, err)
}

// next advances to the next row; it returns false at the end of the file.
func (t *table) next() (bool, error) {
	rec, err := t.r.Read()
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, t.wrap(err)
	}
	t.rec = rec
	t.line, _ = t.r.FieldPos(0)
	return true, nil
}

func (t *table) fail(col string, format string, args ...any) error {
	i := t.index[col]
	line, _ := t.r.FieldPos(i)
	return &ParseError{File: t.file, Line: line, Column: i + 1, Name: col, Err: fmt.Errorf(format, args...)}
}

func (t *table) str(col string) string { return strings.TrimSpace(t.rec[t.index[col]]) }

// int parses an integer column; empty is an error.
func (t *table) int(col string) (int64, error) {
	s := t.str(col)
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		// Accept integral floats ("96.0"), common in exported traces.
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, t.fail(col, "%q is not an integer", s)
		}
		v = int64(f)
	}
	return v, nil
}

// nonneg parses an integer column that must be >= 0 and <= limit.
func (t *table) nonneg(col string, limit int64) (int64, error) {
	v, err := t.int(col)
	if err != nil {
		return 0, err
	}
	if v < 0 || v > limit {
		return 0, t.fail(col, "%d outside [0, %d]", v, limit)
	}
	return v, nil
}

// float parses a finite float column; empty is an error.
func (t *table) float(col string) (float64, error) {
	s := t.str(col)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, t.fail(col, "%q is not a finite number", s)
	}
	return v, nil
}
