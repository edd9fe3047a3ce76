package datasets

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/tegrl/tegrl/env"
)

// KindDLJobs is a file of env.DLJobs, the deep-learning training jobs of
// the round simulator (env.RoundSim), in arrival order.
const KindDLJobs Kind = "dljobs"

// DL jobs columns, in file order.
const (
	dcID = iota
	dcModel
	dcScale
	dcArrival
	dcSteps
	dcDuration
	dcPriority
)

// DLJobsSchema is the schema of a dljobs file (without its metadata): one
// row per env.DLJob. The job type is stored by its name in the throughput
// table, not its index, so that a file stays readable by a table whose
// types (sorted by name) have moved.
var DLJobsSchema = arrow.NewSchema([]arrow.Field{
	dcID:       {Name: "id", Type: arrow.PrimitiveTypes.Int32},
	dcModel:    {Name: "model", Type: arrow.BinaryTypes.String},
	dcScale:    {Name: "scale", Type: arrow.PrimitiveTypes.Int32},
	dcArrival:  {Name: "arrival_s", Type: arrow.PrimitiveTypes.Float64},
	dcSteps:    {Name: "steps", Type: arrow.PrimitiveTypes.Float64},
	dcDuration: {Name: "duration_s", Type: arrow.PrimitiveTypes.Float64},
	dcPriority: {Name: "priority", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// DLJobsWriter streams env.DLJobs into a dljobs file.
type DLJobsWriter struct {
	bw          *batchWriter
	t           *env.ThroughputTable
	prevArrival float64
	id, scale   *array.Int32Builder
	model       *array.StringBuilder
	arrival     *array.Float64Builder
	steps       *array.Float64Builder
	duration    *array.Float64Builder
	priority    *array.Float64Builder
}

func dljobsSchema(opt *WriterOptions) *arrow.Schema {
	md := baseMetadata(KindDLJobs, opt, nil)
	return arrow.NewSchema(DLJobsSchema.Fields(), &md)
}

var errNoTable = errors.New("no throughput table: job types are stored by name and need one")

// NewDLJobsWriter writes a dljobs file to w; t names the jobs' types.
// Close writes the footer; it does not close w.
func NewDLJobsWriter(w io.Writer, t *env.ThroughputTable, opt WriterOptions) (*DLJobsWriter, error) {
	if t == nil {
		return nil, fmt.Errorf("dljobs: %w", errNoTable)
	}
	bw, err := newBatchWriter("dljobs", w, dljobsSchema(&opt), opt)
	if err != nil {
		return nil, err
	}
	return newDLJobsWriter(bw, t), nil
}

// CreateDLJobs creates the dljobs file path (written to path.partial and
// renamed by a successful Close); t names the jobs' types.
func CreateDLJobs(path string, t *env.ThroughputTable, opt WriterOptions) (*DLJobsWriter, error) {
	if t == nil {
		return nil, fmt.Errorf("%s: %w", path, errNoTable)
	}
	bw, err := createBatchWriter(path, dljobsSchema(&opt), opt)
	if err != nil {
		return nil, err
	}
	return newDLJobsWriter(bw, t), nil
}

func newDLJobsWriter(bw *batchWriter, t *env.ThroughputTable) *DLJobsWriter {
	f := bw.rb.Fields()
	fl := func(i int) *array.Float64Builder { return f[i].(*array.Float64Builder) }
	return &DLJobsWriter{bw: bw, t: t, id: f[dcID].(*array.Int32Builder), scale: f[dcScale].(*array.Int32Builder),
		model: f[dcModel].(*array.StringBuilder), arrival: fl(dcArrival), steps: fl(dcSteps), duration: fl(dcDuration),
		priority: fl(dcPriority)}
}

// Append adds one job. Jobs must come in arrival order with IDs 0, 1, 2,
// ..., as env.NewJobList requires, and with a job type of the writer's
// table.
func (w *DLJobsWriter) Append(j env.DLJob) error {
	if w.bw.err != nil {
		return w.bw.err
	}
	if j.Model < 0 || j.Model >= len(w.t.Models) {
		return w.bw.fail(fmt.Errorf("%s: row %d (job %d): column model: job type %d outside the table's %d types",
			w.bw.name, w.bw.total, j.ID, j.Model, len(w.t.Models)))
	}
	if col, err := checkDLJob(&j, w.bw.total, w.prevArrival); err != nil {
		return w.bw.fail(fmt.Errorf("%s: row %d (job %d): column %s: %w", w.bw.name, w.bw.total, j.ID, col, err))
	}
	w.bw.startRow()
	w.prevArrival = j.Arrival
	name := w.t.Models[j.Model]
	w.id.Append(int32(j.ID))
	w.model.Append(name)
	w.scale.Append(int32(j.Scale))
	w.arrival.Append(j.Arrival)
	w.steps.Append(j.Steps)
	w.duration.Append(j.Duration)
	w.priority.Append(j.Priority)
	return w.bw.endRow(len(name) + 48)
}

// Rows is the number of jobs appended so far.
func (w *DLJobsWriter) Rows() int64 { return w.bw.total }

// Close flushes the last batch and writes the footer.
func (w *DLJobsWriter) Close() error { return w.bw.close() }

// checkDLJob validates one job as row row of a dljobs file, prev being
// the arrival of the job before it (the job type is checked against the
// table apart). It returns the column at fault.
func checkDLJob(j *env.DLJob, row int64, prev float64) (string, error) {
	switch {
	case int64(j.ID) != row:
		return "id", fmt.Errorf("id %d in row %d: a workload numbers its jobs 0, 1, 2, ...", j.ID, row)
	case j.ID > maxInt32:
		return "id", fmt.Errorf("id %d does not fit int32", j.ID)
	case j.Scale < 1 || j.Scale > maxInt32:
		return "scale", fmt.Errorf("gang of %d GPUs: want 1 to %d", j.Scale, maxInt32)
	case !finite(j.Arrival) || j.Arrival < 0:
		return "arrival_s", fmt.Errorf("%v must be finite and >= 0", j.Arrival)
	case j.Arrival < prev:
		return "arrival_s", fmt.Errorf("%v is before the previous job's %v: jobs are sorted by arrival", j.Arrival, prev)
	case !(j.Steps > 0) || !finite(j.Steps):
		return "steps", fmt.Errorf("%v must be finite and > 0", j.Steps)
	case !finite(j.Duration) || j.Duration < 0:
		return "duration_s", fmt.Errorf("%v must be finite and >= 0", j.Duration)
	case !finite(j.Priority) || j.Priority < 0:
		return "priority", fmt.Errorf("%v must be finite and >= 0", j.Priority)
	}
	return "", nil
}

// dljobsReader reads a dljobs file batch by batch, mapping job type names
// to indices of t; with t nil (inspect, which has no table) it checks the
// names are not empty and leaves Model 0.
type dljobsReader struct {
	br          *batchReader
	t           *env.ThroughputTable
	batch       []env.DLJob
	err         error
	prevArrival float64
}

func (r *dljobsReader) decode(rec arrow.RecordBatch) error {
	if err := r.br.checkNulls(rec); err != nil {
		return err
	}
	c := rec.Columns()
	id, scale := c[dcID].(*array.Int32), c[dcScale].(*array.Int32)
	model := c[dcModel].(*array.String)
	arrival, steps := c[dcArrival].(*array.Float64), c[dcSteps].(*array.Float64)
	duration, priority := c[dcDuration].(*array.Float64), c[dcPriority].(*array.Float64)
	n := int(rec.NumRows())
	r.batch = r.batch[:0]
	for i := 0; i < n; i++ {
		j := env.DLJob{
			ID:       int(id.Value(i)),
			Scale:    int(scale.Value(i)),
			Arrival:  arrival.Value(i),
			Steps:    steps.Value(i),
			Duration: duration.Value(i),
			Priority: priority.Value(i),
		}
		name := model.Value(i)
		switch {
		case name == "":
			return r.br.rowErr(i, "model", "empty job type name")
		case r.t != nil:
			if j.Model = r.t.Model(name); j.Model < 0 {
				return r.br.rowErr(i, "model", "unknown job type %q: not in the throughput table (%s)", name, strings.Join(r.t.Models, ", "))
			}
		}
		if col, err := checkDLJob(&j, r.br.base+int64(i), r.prevArrival); err != nil {
			return r.br.rowErr(i, col, "%w", err)
		}
		r.prevArrival = j.Arrival
		r.batch = append(r.batch, j)
	}
	return nil
}

func (r *dljobsReader) readAll() ([]env.DLJob, error) {
	defer r.br.close()
	var jobs []env.DLJob
	for r.br.advance(&r.err, r.decode) {
		jobs = append(jobs, r.batch...)
	}
	if r.err != nil {
		return nil, r.err
	}
	return jobs, nil
}

// ReadDLJobs reads the dljobs file path, mapping its job type names to
// indices of t; a name t lacks is an error naming it and its row.
func ReadDLJobs(path string, t *env.ThroughputTable, opt ReaderOptions) ([]env.DLJob, error) {
	if t == nil {
		return nil, fmt.Errorf("%s: %w", path, errNoTable)
	}
	br, err := openPath(path, KindDLJobs, DLJobsSchema, opt)
	if err != nil {
		return nil, err
	}
	return (&dljobsReader{br: br, t: t}).readAll()
}

// ReadDLJobsFrom reads a dljobs file from src as ReadDLJobs does; name
// names it in errors.
func ReadDLJobsFrom(name string, src ReadAtSeeker, t *env.ThroughputTable, opt ReaderOptions) ([]env.DLJob, error) {
	if t == nil {
		return nil, fmt.Errorf("%s: %w", name, errNoTable)
	}
	br, err := newBatchReader(name, src, KindDLJobs, DLJobsSchema, opt)
	if err != nil {
		return nil, err
	}
	return (&dljobsReader{br: br, t: t}).readAll()
}

// validateDLJobs checks every row of the dljobs file path without a
// throughput table (job type names are only required to be non-empty).
func validateDLJobs(path string) error {
	br, err := openPath(path, KindDLJobs, DLJobsSchema, ReaderOptions{})
	if err != nil {
		return err
	}
	_, err = (&dljobsReader{br: br}).readAll()
	return err
}
