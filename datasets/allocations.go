package datasets

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// KindAllocations is a file of the allocations a round simulator's policy
// computed (env.RoundConfig.OnAllocate): one row per allocation, job and
// GPU type with a positive share.
const KindAllocations Kind = "allocations"

// Allocation is one row of an allocations file: the share of round time
// job Job gets on GPU type GPUType in allocation Index, computed at TimeS.
type Allocation struct {
	Index    int32   // allocation number, from 0
	TimeS    float64 // simulated seconds of the allocation
	Job      int32   // env.DLJob.ID
	GPUType  string  // as in env.ThroughputTable.GPUs ("v100")
	Fraction float64 // share of round time, (0, 1]
}

// Allocations columns, in file order.
const (
	acIndex = iota
	acTime
	acJob
	acGPUType
	acFraction
)

// AllocationsSchema is the schema of an allocations file (without its
// metadata). Rows come in allocation order; zero shares are left out.
var AllocationsSchema = arrow.NewSchema([]arrow.Field{
	acIndex:    {Name: "index", Type: arrow.PrimitiveTypes.Int32},
	acTime:     {Name: "time_s", Type: arrow.PrimitiveTypes.Float64},
	acJob:      {Name: "job", Type: arrow.PrimitiveTypes.Int32},
	acGPUType:  {Name: "gpu_type", Type: arrow.BinaryTypes.String},
	acFraction: {Name: "fraction", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// checkAllocation validates a as the row after prev (nil for the first
// row). It returns the column at fault.
func checkAllocation(a, prev *Allocation) (string, error) {
	switch {
	case a.Index < 0:
		return "index", fmt.Errorf("%d is negative", a.Index)
	case prev != nil && a.Index < prev.Index:
		return "index", fmt.Errorf("%d is before the previous row's %d: rows are sorted by allocation", a.Index, prev.Index)
	case !finite(a.TimeS) || a.TimeS < 0:
		return "time_s", fmt.Errorf("%v must be finite and >= 0", a.TimeS)
	case prev != nil && a.TimeS < prev.TimeS:
		return "time_s", fmt.Errorf("%v is before the previous row's %v: allocations are sorted by time", a.TimeS, prev.TimeS)
	case prev != nil && a.Index == prev.Index && a.TimeS != prev.TimeS:
		return "time_s", fmt.Errorf("%v in allocation %d, whose previous row has %v: an allocation has one time", a.TimeS, a.Index, prev.TimeS)
	case a.Job < 0:
		return "job", fmt.Errorf("%d is negative", a.Job)
	case a.GPUType == "":
		return "gpu_type", errors.New("empty GPU type")
	case !(a.Fraction > 0 && a.Fraction <= 1):
		return "fraction", fmt.Errorf("%v outside (0, 1]", a.Fraction)
	}
	return "", nil
}

// AllocationsWriter streams allocations into an allocations file.
type AllocationsWriter struct {
	bw         *batchWriter
	prev       Allocation
	index, job *array.Int32Builder
	time, frac *array.Float64Builder
	gpu        *array.StringBuilder
}

func allocationsSchema(opt *WriterOptions) *arrow.Schema {
	md := baseMetadata(KindAllocations, opt, nil)
	return arrow.NewSchema(AllocationsSchema.Fields(), &md)
}

// NewAllocationsWriter writes an allocations file to w. Close writes the
// footer; it does not close w.
func NewAllocationsWriter(w io.Writer, opt WriterOptions) (*AllocationsWriter, error) {
	bw, err := newBatchWriter("allocations", w, allocationsSchema(&opt), opt)
	if err != nil {
		return nil, err
	}
	return newAllocationsWriter(bw), nil
}

// CreateAllocations creates the allocations file path (written to
// path.partial and renamed by a successful Close).
func CreateAllocations(path string, opt WriterOptions) (*AllocationsWriter, error) {
	bw, err := createBatchWriter(path, allocationsSchema(&opt), opt)
	if err != nil {
		return nil, err
	}
	return newAllocationsWriter(bw), nil
}

func newAllocationsWriter(bw *batchWriter) *AllocationsWriter {
	f := bw.rb.Fields()
	return &AllocationsWriter{bw: bw, index: f[acIndex].(*array.Int32Builder), job: f[acJob].(*array.Int32Builder),
		time: f[acTime].(*array.Float64Builder), frac: f[acFraction].(*array.Float64Builder),
		gpu: f[acGPUType].(*array.StringBuilder)}
}

// Append adds one row. Rows come in allocation order (indices and times
// not decreasing, one time per allocation).
func (w *AllocationsWriter) Append(a Allocation) error {
	if w.bw.err != nil {
		return w.bw.err
	}
	var prev *Allocation
	if w.bw.total > 0 {
		prev = &w.prev
	}
	if col, err := checkAllocation(&a, prev); err != nil {
		return w.bw.fail(fmt.Errorf("%s: row %d (allocation %d, job %d, %s): column %s: %w",
			w.bw.name, w.bw.total, a.Index, a.Job, a.GPUType, col, err))
	}
	w.bw.startRow()
	w.prev = a
	w.index.Append(a.Index)
	w.time.Append(a.TimeS)
	w.job.Append(a.Job)
	w.gpu.Append(a.GPUType)
	w.frac.Append(a.Fraction)
	return w.bw.endRow(len(a.GPUType) + 28)
}

// Rows is the number of rows appended so far.
func (w *AllocationsWriter) Rows() int64 { return w.bw.total }

// Close flushes the last batch and writes the footer.
func (w *AllocationsWriter) Close() error { return w.bw.close() }

// AllocationsReader reads an allocations file batch by batch.
type AllocationsReader struct {
	br      *batchReader
	batch   []Allocation
	err     error
	prev    Allocation
	hasPrev bool
	// gpus holds the GPU type names read so far: a file has a handful,
	// repeated on every row, and rows share one copy of each.
	gpus []string
}

// OpenAllocations opens the allocations file path.
func OpenAllocations(path string, opt ReaderOptions) (*AllocationsReader, error) {
	br, err := openPath(path, KindAllocations, AllocationsSchema, opt)
	if err != nil {
		return nil, err
	}
	return &AllocationsReader{br: br}, nil
}

// NewAllocationsReader reads an allocations file from r; name names it in
// errors.
func NewAllocationsReader(name string, r ReadAtSeeker, opt ReaderOptions) (*AllocationsReader, error) {
	br, err := newBatchReader(name, r, KindAllocations, AllocationsSchema, opt)
	if err != nil {
		return nil, err
	}
	return &AllocationsReader{br: br}, nil
}

// Metadata returns the file's schema metadata.
func (r *AllocationsReader) Metadata() map[string]string { return r.br.meta }

// Next loads the next batch; it returns false at the end of the file or
// on an error (see Err).
func (r *AllocationsReader) Next() bool {
	if !r.br.advance(&r.err, r.decode) {
		r.batch = r.batch[:0]
		return false
	}
	return true
}

// Batch returns the rows of the current batch. The slice is reused by
// Next; the strings are not.
func (r *AllocationsReader) Batch() []Allocation { return r.batch }

// Err returns the error that stopped Next, if any.
func (r *AllocationsReader) Err() error { return r.err }

// Close releases the reader (and closes the file OpenAllocations opened).
func (r *AllocationsReader) Close() error { return r.br.close() }

// maxInterned bounds the GPU type names the reader shares: past it (a
// corrupted or unusual file), names are copied per row.
const maxInterned = 64

func (r *AllocationsReader) gpuName(s string) string {
	for _, g := range r.gpus {
		if g == s {
			return g
		}
	}
	c := strings.Clone(s)
	if len(r.gpus) < maxInterned {
		r.gpus = append(r.gpus, c)
	}
	return c
}

func (r *AllocationsReader) decode(rec arrow.RecordBatch) error {
	if err := r.br.checkNulls(rec); err != nil {
		return err
	}
	c := rec.Columns()
	index, job := c[acIndex].(*array.Int32), c[acJob].(*array.Int32)
	time, frac := c[acTime].(*array.Float64), c[acFraction].(*array.Float64)
	gpu := c[acGPUType].(*array.String)
	n := int(rec.NumRows())
	r.batch = r.batch[:0]
	for i := 0; i < n; i++ {
		a := Allocation{Index: index.Value(i), TimeS: time.Value(i), Job: job.Value(i), Fraction: frac.Value(i)}
		if s := gpu.Value(i); s != "" {
			a.GPUType = r.gpuName(s)
		}
		var prev *Allocation
		if r.hasPrev {
			prev = &r.prev
		}
		if col, err := checkAllocation(&a, prev); err != nil {
			return r.br.rowErr(i, col, "%w", err)
		}
		r.prev, r.hasPrev = a, true
		r.batch = append(r.batch, a)
	}
	return nil
}
