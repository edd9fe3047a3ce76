package datasets

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/tegrl/tegrl/env"
)

// UsageSample is one utilisation reading of one machine, as in the 2018
// Alibaba machine_usage table. Optional channels are NaN when the source
// has no value (stored as nulls).
type UsageSample struct {
	Machine string
	Time    int64   // s from the trace start
	CPUUtil float32 // percent, [0, 100]
	MemUtil float32 // percent, [0, 100]
	// MemGPS is normalised memory bandwidth and MKPI cache misses per
	// thousand instructions; both often missing (NaN).
	MemGPS, MKPI float32
	// NetIn and NetOut are normalised incoming and outgoing traffic.
	NetIn, NetOut float32
	// DiskIO is disk I/O in percent, [0, 100]; NaN when missing or invalid
	// (the trace writes -1 or 101).
	DiskIO float32
}

// Usage columns, in file order (docs/datasets.md).
const (
	ucMachine = iota
	ucTime
	ucCPU
	ucMem
	ucMemGPS
	ucMKPI
	ucNetIn
	ucNetOut
	ucDisk
)

// UsageSchema is the schema of a usage file (without its metadata).
var UsageSchema = arrow.NewSchema([]arrow.Field{
	ucMachine: {Name: "machine", Type: arrow.BinaryTypes.String},
	ucTime:    {Name: "time_s", Type: arrow.PrimitiveTypes.Int64},
	ucCPU:     {Name: "cpu_util_percent", Type: arrow.PrimitiveTypes.Float32},
	ucMem:     {Name: "mem_util_percent", Type: arrow.PrimitiveTypes.Float32},
	ucMemGPS:  {Name: "mem_gps", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	ucMKPI:    {Name: "mkpi", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	ucNetIn:   {Name: "net_in", Type: arrow.PrimitiveTypes.Float32},
	ucNetOut:  {Name: "net_out", Type: arrow.PrimitiveTypes.Float32},
	ucDisk:    {Name: "disk_io_percent", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
}, nil)

// checkUsage validates a sample; it returns the column at fault.
func checkUsage(u *UsageSample) (string, error) {
	pct := func(x float32) bool { return x >= 0 && x <= 100 } // false for NaN
	opt := func(x float32) bool { return x != x || (x >= 0 && !math.IsInf(float64(x), 0)) }
	switch {
	case u.Machine == "":
		return "machine", errors.New("empty machine id")
	case u.Time < 0:
		return "time_s", fmt.Errorf("%d is negative", u.Time)
	case !pct(u.CPUUtil):
		return "cpu_util_percent", fmt.Errorf("%v outside [0, 100]", u.CPUUtil)
	case !pct(u.MemUtil):
		return "mem_util_percent", fmt.Errorf("%v outside [0, 100]", u.MemUtil)
	case !opt(u.MemGPS):
		return "mem_gps", fmt.Errorf("%v must be finite and >= 0 (or missing)", u.MemGPS)
	case !opt(u.MKPI):
		return "mkpi", fmt.Errorf("%v must be finite and >= 0 (or missing)", u.MKPI)
	case !(u.NetIn >= 0) || math.IsInf(float64(u.NetIn), 0):
		return "net_in", fmt.Errorf("%v must be finite and >= 0", u.NetIn)
	case !(u.NetOut >= 0) || math.IsInf(float64(u.NetOut), 0):
		return "net_out", fmt.Errorf("%v must be finite and >= 0", u.NetOut)
	case u.DiskIO == u.DiskIO && !pct(u.DiskIO):
		return "disk_io_percent", fmt.Errorf("%v outside [0, 100] (or missing)", u.DiskIO)
	}
	return "", nil
}

// UsageWriter streams usage samples into a usage file.
type UsageWriter struct {
	bw                                        *batchWriter
	machine                                   *array.StringBuilder
	time                                      *array.Int64Builder
	cpu, mem, memGPS, mkpi, netIn, netOut, io *array.Float32Builder
}

func usageSchema(opt *WriterOptions) *arrow.Schema {
	md := baseMetadata(KindUsage, opt, nil)
	return arrow.NewSchema(UsageSchema.Fields(), &md)
}

// NewUsageWriter writes a usage file to w. Close writes the footer; it
// does not close w.
func NewUsageWriter(w io.Writer, opt WriterOptions) (*UsageWriter, error) {
	bw, err := newBatchWriter("usage", w, usageSchema(&opt), opt)
	if err != nil {
		return nil, err
	}
	return newUsageWriter(bw), nil
}

// CreateUsage creates the usage file path (written to path.partial and
// renamed by a successful Close).
func CreateUsage(path string, opt WriterOptions) (*UsageWriter, error) {
	bw, err := createBatchWriter(path, usageSchema(&opt), opt)
	if err != nil {
		return nil, err
	}
	return newUsageWriter(bw), nil
}

func newUsageWriter(bw *batchWriter) *UsageWriter {
	f := bw.rb.Fields()
	fl := func(i int) *array.Float32Builder { return f[i].(*array.Float32Builder) }
	return &UsageWriter{bw: bw, machine: f[ucMachine].(*array.StringBuilder), time: f[ucTime].(*array.Int64Builder),
		cpu: fl(ucCPU), mem: fl(ucMem), memGPS: fl(ucMemGPS), mkpi: fl(ucMKPI), netIn: fl(ucNetIn), netOut: fl(ucNetOut), io: fl(ucDisk)}
}

// Append adds one sample.
func (w *UsageWriter) Append(u *UsageSample) error {
	if w.bw.err != nil {
		return w.bw.err
	}
	if col, err := checkUsage(u); err != nil {
		return w.bw.fail(fmt.Errorf("%s: row %d (machine %s, time %d): column %s: %w", w.bw.name, w.bw.total, u.Machine, u.Time, col, err))
	}
	w.bw.startRow()
	w.machine.Append(u.Machine)
	w.time.Append(u.Time)
	w.cpu.Append(u.CPUUtil)
	w.mem.Append(u.MemUtil)
	for _, o := range []struct {
		b *array.Float32Builder
		x float32
	}{{w.memGPS, u.MemGPS}, {w.mkpi, u.MKPI}, {w.io, u.DiskIO}} {
		if o.x != o.x {
			o.b.AppendNull()
		} else {
			o.b.Append(o.x)
		}
	}
	w.netIn.Append(u.NetIn)
	w.netOut.Append(u.NetOut)
	return w.bw.endRow(len(u.Machine) + 40)
}

// Rows is the number of samples appended so far.
func (w *UsageWriter) Rows() int64 { return w.bw.total }

// Close flushes the last batch and writes the footer.
func (w *UsageWriter) Close() error { return w.bw.close() }

// UsageReader reads a usage file batch by batch.
type UsageReader struct {
	br    *batchReader
	batch []UsageSample
	err   error
}

// OpenUsage opens the usage file path.
func OpenUsage(path string, opt ReaderOptions) (*UsageReader, error) {
	br, err := openPath(path, KindUsage, UsageSchema, opt)
	if err != nil {
		return nil, err
	}
	return &UsageReader{br: br}, nil
}

// NewUsageReader reads a usage file from r; name names it in errors.
func NewUsageReader(name string, r ReadAtSeeker, opt ReaderOptions) (*UsageReader, error) {
	br, err := newBatchReader(name, r, KindUsage, UsageSchema, opt)
	if err != nil {
		return nil, err
	}
	return &UsageReader{br: br}, nil
}

// Next loads the next batch; it returns false at the end of the file or
// on an error (see Err).
func (r *UsageReader) Next() bool {
	if !r.br.advance(&r.err, r.decode) {
		r.batch = r.batch[:0]
		return false
	}
	return true
}

// Batch returns the samples of the current batch; the slice is reused by
// Next.
func (r *UsageReader) Batch() []UsageSample { return r.batch }

// Err returns the error that stopped Next, if any.
func (r *UsageReader) Err() error { return r.err }

// Metadata returns the file's schema metadata.
func (r *UsageReader) Metadata() map[string]string { return r.br.meta }

// Close releases the reader (and closes the file OpenUsage opened).
func (r *UsageReader) Close() error { return r.br.close() }

func (r *UsageReader) decode(rec arrow.RecordBatch) error {
	if err := r.br.checkNulls(rec); err != nil {
		return err
	}
	c := rec.Columns()
	machine, tm := c[ucMachine].(*array.String), c[ucTime].(*array.Int64)
	fl := func(i int) *array.Float32 { return c[i].(*array.Float32) }
	cpu, mem, memGPS, mkpi, netIn, netOut, disk := fl(ucCPU), fl(ucMem), fl(ucMemGPS), fl(ucMKPI), fl(ucNetIn), fl(ucNetOut), fl(ucDisk)
	nan := float32(math.NaN())
	opt := func(a *array.Float32, i int) (float32, bool) {
		if a.IsNull(i) {
			return nan, true
		}
		v := a.Value(i)
		return v, v == v // a stored NaN is not a missing value
	}
	r.batch = r.batch[:0]
	prev := ""
	for i := 0; i < int(rec.NumRows()); i++ {
		u := UsageSample{Time: tm.Value(i), CPUUtil: cpu.Value(i), MemUtil: mem.Value(i), NetIn: netIn.Value(i), NetOut: netOut.Value(i)}
		// Samples of one machine come in runs: share the string.
		if m := machine.Value(i); m == prev {
			u.Machine = prev
		} else {
			u.Machine = strings.Clone(m)
			prev = u.Machine
		}
		var ok bool
		for _, o := range []struct {
			a    *array.Float32
			dst  *float32
			name string
		}{{memGPS, &u.MemGPS, "mem_gps"}, {mkpi, &u.MKPI, "mkpi"}, {disk, &u.DiskIO, "disk_io_percent"}} {
			if *o.dst, ok = opt(o.a, i); !ok {
				return r.br.rowErr(i, o.name, "NaN stored as a value (a missing value is a null)")
			}
		}
		if col, err := checkUsage(&u); err != nil {
			return r.br.rowErr(i, col, "%w", err)
		}
		r.batch = append(r.batch, u)
	}
	return nil
}

// usageCSVColumns are the columns of the 2018 machine_usage table, which
// has no header row.
var usageCSVColumns = []string{"machine_id", "time_stamp", "cpu_util_percent", "mem_util_percent", "mem_gps", "mkpi", "net_in", "net_out", "disk_io_percent"}

// ReadAlibaba2018Usage streams the 2018 trace's machine_usage table from
// r, calling fn for each row in file order; file names it in errors
// (env.ParseError, as env's trace loaders report). env has no loader for
// this table. Empty mem_gps and mkpi are missing values; disk_io_percent
// -1 and 101, the trace's marks of an invalid reading, are missing too.
// Every other malformed or out-of-range value is an error: nothing is
// silently skipped.
func ReadAlibaba2018Usage(file string, r io.Reader, fn func(*UsageSample) error) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(usageCSVColumns)
	cr.ReuseRecord = true
	var u UsageSample
	prev := ""
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return &env.ParseError{File: file, Line: pe.Line, Column: pe.Column, Err: pe.Err}
			}
			return fmt.Errorf("%s: %w", file, err)
		}
		fail := func(col int, format string, args ...any) error {
			line, _ := cr.FieldPos(col)
			return &env.ParseError{File: file, Line: line, Column: col + 1, Name: usageCSVColumns[col], Err: fmt.Errorf(format, args...)}
		}
		num := func(col int, optional bool) (float32, error) {
			s := strings.TrimSpace(rec[col])
			if s == "" && optional {
				return float32(math.NaN()), nil
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || !finite(v) || math.Abs(v) > math.MaxFloat32 {
				return 0, fail(col, "%q is not a finite number", s)
			}
			return float32(v), nil
		}
		id := strings.TrimSpace(rec[0])
		if id == "" {
			return fail(0, "empty machine id")
		}
		if id != prev {
			prev = strings.Clone(id)
		}
		u = UsageSample{Machine: prev}
		ts := strings.TrimSpace(rec[1])
		if u.Time, err = strconv.ParseInt(ts, 10, 64); err != nil {
			return fail(1, "%q is not an integer", ts)
		}
		vals := []*float32{nil, nil, &u.CPUUtil, &u.MemUtil, &u.MemGPS, &u.MKPI, &u.NetIn, &u.NetOut, &u.DiskIO}
		for col := 2; col < len(vals); col++ {
			if *vals[col], err = num(col, col == ucMemGPS || col == ucMKPI); err != nil {
				return err
			}
		}
		if u.DiskIO == -1 || u.DiskIO == 101 {
			u.DiskIO = float32(math.NaN())
		}
		if col, err := checkUsage(&u); err != nil {
			for i, n := range UsageSchema.Fields() {
				if n.Name == col {
					return fail(i, "%w", err)
				}
			}
			return fail(0, "%w", err)
		}
		if err := fn(&u); err != nil {
			return err
		}
	}
}

// ConvertAlibaba2018Usage converts the machine_usage CSV at csvPath into
// the usage file outPath, streaming: one batch in memory at a time. It
// returns the number of samples.
func ConvertAlibaba2018Usage(csvPath, outPath string, opt WriterOptions) (int64, error) {
	f, err := os.Open(csvPath)
	if err != nil {
		return 0, fmt.Errorf("open trace: %w", err)
	}
	defer f.Close()
	if opt.Source == "" {
		opt.Source = "alibaba-2018:" + filepath.Base(csvPath)
	}
	w, err := CreateUsage(outPath, opt)
	if err != nil {
		return 0, err
	}
	if err := ReadAlibaba2018Usage(filepath.Base(csvPath), f, w.Append); err != nil {
		w.Close()
		return 0, err
	}
	return w.Rows(), w.Close()
}
