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

// MetaWorkloadName holds env.Workload.Name in a jobs file.
const MetaWorkloadName = "tegrl.workload_name"

func init() { knownKeys[KindJobs] = []string{MetaWorkloadName} }

// Jobs columns, in file order (docs/datasets.md).
const (
	jcID = iota
	jcName
	jcKind
	jcQoS
	jcArrival
	jcDuration
	jcCPU
	jcMem
	jcGPUs
	jcGPUMilli
	jcGPUModels
	jcDeadline
	jcLatencySLO
	jcService
	jcTenant
	jcMigratable
	jcNetGbps
)

// JobsSchema is the schema of a jobs file (without its metadata): one row
// per env.Job, in workload order.
var JobsSchema = arrow.NewSchema([]arrow.Field{
	jcID:         {Name: "id", Type: arrow.PrimitiveTypes.Int64},
	jcName:       {Name: "name", Type: arrow.BinaryTypes.String},
	jcKind:       {Name: "kind", Type: arrow.BinaryTypes.String},
	jcQoS:        {Name: "qos", Type: arrow.BinaryTypes.String},
	jcArrival:    {Name: "arrival_s", Type: arrow.PrimitiveTypes.Float64},
	jcDuration:   {Name: "duration_s", Type: arrow.PrimitiveTypes.Float64},
	jcCPU:        {Name: "cpu_milli", Type: arrow.PrimitiveTypes.Int64},
	jcMem:        {Name: "mem_mib", Type: arrow.PrimitiveTypes.Int64},
	jcGPUs:       {Name: "gpus", Type: arrow.PrimitiveTypes.Int32},
	jcGPUMilli:   {Name: "gpu_milli", Type: arrow.PrimitiveTypes.Int32},
	jcGPUModels:  {Name: "gpu_models", Type: arrow.ListOfNonNullable(arrow.BinaryTypes.String), Nullable: true},
	jcDeadline:   {Name: "deadline_s", Type: arrow.PrimitiveTypes.Float64},
	jcLatencySLO: {Name: "latency_slo_s", Type: arrow.PrimitiveTypes.Float64},
	jcService:    {Name: "service", Type: arrow.PrimitiveTypes.Int32},
	jcTenant:     {Name: "tenant", Type: arrow.PrimitiveTypes.Int32},
	jcMigratable: {Name: "migratable", Type: arrow.FixedWidthTypes.Boolean},
	jcNetGbps:    {Name: "net_gbps", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// JobsWriter streams env.Jobs into a jobs file.
type JobsWriter struct {
	bw          *batchWriter
	prevArrival float64
	b           struct {
		id, cpu, mem                              *array.Int64Builder
		name, kind, qos                           *array.StringBuilder
		arrival, duration, deadline, slo, netGbps *array.Float64Builder
		gpus, gpuMilli, service, tenant           *array.Int32Builder
		models                                    *array.ListBuilder
		model                                     *array.StringBuilder
		migratable                                *array.BooleanBuilder
	}
}

func jobsSchema(workload string, opt *WriterOptions) *arrow.Schema {
	md := baseMetadata(KindJobs, opt, [][2]string{{MetaWorkloadName, workload}})
	return arrow.NewSchema(JobsSchema.Fields(), &md)
}

// NewJobsWriter writes a jobs file for the workload named workload to w.
// Close writes the footer; it does not close w.
func NewJobsWriter(w io.Writer, workload string, opt WriterOptions) (*JobsWriter, error) {
	bw, err := newBatchWriter("jobs", w, jobsSchema(workload, &opt), opt)
	if err != nil {
		return nil, err
	}
	return newJobsWriter(bw), nil
}

// CreateJobs creates the jobs file path (written to path.partial and
// renamed by a successful Close).
func CreateJobs(path, workload string, opt WriterOptions) (*JobsWriter, error) {
	bw, err := createBatchWriter(path, jobsSchema(workload, &opt), opt)
	if err != nil {
		return nil, err
	}
	return newJobsWriter(bw), nil
}

func newJobsWriter(bw *batchWriter) *JobsWriter {
	w := &JobsWriter{bw: bw}
	f := bw.rb.Fields()
	b := &w.b
	b.id, b.cpu, b.mem = f[jcID].(*array.Int64Builder), f[jcCPU].(*array.Int64Builder), f[jcMem].(*array.Int64Builder)
	b.name, b.kind, b.qos = f[jcName].(*array.StringBuilder), f[jcKind].(*array.StringBuilder), f[jcQoS].(*array.StringBuilder)
	b.arrival, b.duration = f[jcArrival].(*array.Float64Builder), f[jcDuration].(*array.Float64Builder)
	b.deadline, b.slo, b.netGbps = f[jcDeadline].(*array.Float64Builder), f[jcLatencySLO].(*array.Float64Builder), f[jcNetGbps].(*array.Float64Builder)
	b.gpus, b.gpuMilli = f[jcGPUs].(*array.Int32Builder), f[jcGPUMilli].(*array.Int32Builder)
	b.service, b.tenant = f[jcService].(*array.Int32Builder), f[jcTenant].(*array.Int32Builder)
	b.models = f[jcGPUModels].(*array.ListBuilder)
	b.model = b.models.ValueBuilder().(*array.StringBuilder)
	b.migratable = f[jcMigratable].(*array.BooleanBuilder)
	return w
}

// Append adds one job. Jobs must come in workload order: IDs 0, 1, 2, ...
// and arrivals non-decreasing, as env.NewSim requires.
func (w *JobsWriter) Append(j *env.Job) error {
	if w.bw.err != nil {
		return w.bw.err
	}
	if col, err := checkJob(j, w.bw.total, w.prevArrival); err != nil {
		return w.bw.fail(fmt.Errorf("%s: job %d (%s): column %s: %w", w.bw.name, j.ID, j.Name, col, err))
	}
	w.bw.startRow()
	w.prevArrival = j.Arrival
	b := &w.b
	b.id.Append(int64(j.ID))
	b.name.Append(j.Name)
	b.kind.Append(j.Kind.String())
	b.qos.Append(j.QoS.String())
	b.arrival.Append(j.Arrival)
	b.duration.Append(j.Duration)
	b.cpu.Append(j.CPU)
	b.mem.Append(j.Mem)
	b.gpus.Append(int32(j.GPUs))
	b.gpuMilli.Append(int32(j.GPUMilli))
	n := len(j.Name) + 100
	if j.GPUModels == nil {
		b.models.AppendNull()
	} else {
		b.models.Append(true)
		for _, m := range j.GPUModels {
			b.model.Append(m)
			n += len(m) + 4
		}
	}
	b.deadline.Append(j.Deadline)
	b.slo.Append(j.LatencySLO)
	b.service.Append(int32(j.Service))
	b.tenant.Append(int32(j.Tenant))
	b.migratable.Append(j.Migratable)
	b.netGbps.Append(j.NetGbps)
	return w.bw.endRow(n)
}

// Rows is the number of jobs appended so far.
func (w *JobsWriter) Rows() int64 { return w.bw.total }

// Close flushes the last batch and writes the footer.
func (w *JobsWriter) Close() error { return w.bw.close() }

const maxInt32 = 1<<31 - 1

// checkJob validates one job as a row of a jobs file: row is its position
// in the file and prev the arrival of the job before it. It returns the
// column at fault.
func checkJob(j *env.Job, row int64, prev float64) (string, error) {
	switch {
	case int64(j.ID) != row:
		return "id", fmt.Errorf("id %d in row %d: a workload numbers its jobs 0, 1, 2, ...", j.ID, row)
	case j.Kind > env.Service:
		return "kind", fmt.Errorf("unknown kind %d", j.Kind)
	case j.QoS > env.LatencySensitive:
		return "qos", fmt.Errorf("unknown QoS %d", j.QoS)
	case !finite(j.Arrival) || j.Arrival < 0:
		return "arrival_s", fmt.Errorf("%v must be finite and >= 0", j.Arrival)
	case j.Arrival < prev:
		return "arrival_s", fmt.Errorf("%v is before the previous job's %v: jobs are sorted by arrival", j.Arrival, prev)
	case !finite(j.Duration) || j.Duration < 0:
		return "duration_s", fmt.Errorf("%v must be finite and >= 0", j.Duration)
	case j.CPU < 0:
		return "cpu_milli", fmt.Errorf("%d is negative", j.CPU)
	case j.Mem < 0:
		return "mem_mib", fmt.Errorf("%d is negative", j.Mem)
	case !finite(j.Deadline) || j.Deadline < 0:
		return "deadline_s", fmt.Errorf("%v must be finite and >= 0", j.Deadline)
	case !finite(j.LatencySLO) || j.LatencySLO < 0:
		return "latency_slo_s", fmt.Errorf("%v must be finite and >= 0", j.LatencySLO)
	case j.Service < -1 || j.Service > maxInt32:
		return "service", fmt.Errorf("%d outside [-1, %d] (-1: not a service replica)", j.Service, maxInt32)
	case j.Tenant < -maxInt32-1 || j.Tenant > maxInt32:
		return "tenant", fmt.Errorf("%d does not fit int32", j.Tenant)
	case !finite(j.NetGbps) || j.NetGbps < 0:
		return "net_gbps", fmt.Errorf("%v must be finite and >= 0", j.NetGbps)
	}
	for _, m := range j.GPUModels {
		if m == "" {
			return "gpu_models", errors.New("empty model name")
		}
	}
	if err := j.Validate(); err != nil {
		// GPU counts and milli (the rest was checked above, by column).
		return "gpus/gpu_milli", err
	}
	return "", nil
}

// JobsReader reads a jobs file batch by batch.
type JobsReader struct {
	br          *batchReader
	batch       []env.Job
	err         error
	prevArrival float64
}

// OpenJobs opens the jobs file path.
func OpenJobs(path string, opt ReaderOptions) (*JobsReader, error) {
	br, err := openPath(path, KindJobs, JobsSchema, opt)
	if err != nil {
		return nil, err
	}
	return &JobsReader{br: br}, nil
}

// NewJobsReader reads a jobs file from r; name names it in errors.
func NewJobsReader(name string, r ReadAtSeeker, opt ReaderOptions) (*JobsReader, error) {
	br, err := newBatchReader(name, r, KindJobs, JobsSchema, opt)
	if err != nil {
		return nil, err
	}
	return &JobsReader{br: br}, nil
}

// WorkloadName is the name of the workload the file holds.
func (r *JobsReader) WorkloadName() string { return r.br.meta[MetaWorkloadName] }

// Metadata returns the file's schema metadata.
func (r *JobsReader) Metadata() map[string]string { return r.br.meta }

// Next loads the next batch; it returns false at the end of the file or
// on an error (see Err).
func (r *JobsReader) Next() bool {
	if !r.br.advance(&r.err, r.decode) {
		r.batch = r.batch[:0]
		return false
	}
	return true
}

// Batch returns the jobs of the current batch. The slice is reused by
// Next; the jobs' strings and slices are not.
func (r *JobsReader) Batch() []env.Job { return r.batch }

// Err returns the error that stopped Next, if any.
func (r *JobsReader) Err() error { return r.err }

// Close releases the reader (and closes the file OpenJobs opened).
func (r *JobsReader) Close() error { return r.br.close() }

func (r *JobsReader) decode(rec arrow.RecordBatch) error {
	if err := r.br.checkNulls(rec); err != nil {
		return err
	}
	c := rec.Columns()
	id, cpu, mem := c[jcID].(*array.Int64), c[jcCPU].(*array.Int64), c[jcMem].(*array.Int64)
	name, kind, qos := c[jcName].(*array.String), c[jcKind].(*array.String), c[jcQoS].(*array.String)
	arrival, duration := c[jcArrival].(*array.Float64), c[jcDuration].(*array.Float64)
	deadline, slo, net := c[jcDeadline].(*array.Float64), c[jcLatencySLO].(*array.Float64), c[jcNetGbps].(*array.Float64)
	gpus, milli := c[jcGPUs].(*array.Int32), c[jcGPUMilli].(*array.Int32)
	service, tenant := c[jcService].(*array.Int32), c[jcTenant].(*array.Int32)
	models := c[jcGPUModels].(*array.List)
	model := models.ListValues().(*array.String)
	migratable := c[jcMigratable].(*array.Boolean)
	n := int(rec.NumRows())
	r.batch = r.batch[:0]
	for i := 0; i < n; i++ {
		j := env.Job{
			ID:         int(id.Value(i)),
			Name:       strings.Clone(name.Value(i)),
			Arrival:    arrival.Value(i),
			Duration:   duration.Value(i),
			CPU:        cpu.Value(i),
			Mem:        mem.Value(i),
			GPUs:       int(gpus.Value(i)),
			GPUMilli:   int(milli.Value(i)),
			Deadline:   deadline.Value(i),
			LatencySLO: slo.Value(i),
			Service:    int(service.Value(i)),
			Tenant:     int(tenant.Value(i)),
			Migratable: migratable.Value(i),
			NetGbps:    net.Value(i),
		}
		var ok bool
		if j.Kind, ok = parseKind(kind.Value(i)); !ok {
			return r.br.rowErr(i, "kind", "unknown kind %q (want batch, training or service)", kind.Value(i))
		}
		if j.QoS, ok = env.ParseQoS(qos.Value(i)); !ok {
			return r.br.rowErr(i, "qos", "unknown QoS %q (want BE, Burstable, Guaranteed or LS)", qos.Value(i))
		}
		if models.IsValid(i) {
			lo, hi := models.ValueOffsets(i)
			j.GPUModels = make([]string, 0, hi-lo)
			for k := lo; k < hi; k++ {
				j.GPUModels = append(j.GPUModels, strings.Clone(model.Value(int(k))))
			}
		}
		if col, err := checkJob(&j, r.br.base+int64(i), r.prevArrival); err != nil {
			return r.br.rowErr(i, col, "%w", err)
		}
		r.prevArrival = j.Arrival
		r.batch = append(r.batch, j)
	}
	return nil
}

func parseKind(s string) (env.Kind, bool) {
	for k := env.Batch; k <= env.Service; k++ {
		if k.String() == s {
			return k, true
		}
	}
	return 0, false
}

// WriteWorkload writes w as the jobs file path.
func WriteWorkload(path string, w *env.Workload, opt WriterOptions) error {
	jw, err := CreateJobs(path, w.Name, opt)
	if err != nil {
		return err
	}
	return writeJobs(jw, w)
}

// WriteWorkloadTo writes w as a jobs file to out.
func WriteWorkloadTo(out io.Writer, w *env.Workload, opt WriterOptions) error {
	jw, err := NewJobsWriter(out, w.Name, opt)
	if err != nil {
		return err
	}
	return writeJobs(jw, w)
}

func writeJobs(jw *JobsWriter, w *env.Workload) error {
	for i := range w.Jobs {
		if err := jw.Append(&w.Jobs[i]); err != nil {
			jw.Close()
			return err
		}
	}
	return jw.Close()
}

// ReadWorkload reads the jobs file path into a workload.
func ReadWorkload(path string, opt ReaderOptions) (*env.Workload, error) {
	r, err := OpenJobs(path, opt)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return readWorkload(r)
}

// ReadWorkloadFrom reads a jobs file from src; name names it in errors.
func ReadWorkloadFrom(name string, src ReadAtSeeker, opt ReaderOptions) (*env.Workload, error) {
	r, err := NewJobsReader(name, src, opt)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return readWorkload(r)
}

func readWorkload(r *JobsReader) (*env.Workload, error) {
	w := &env.Workload{Name: r.WorkloadName()}
	for r.Next() {
		w.Jobs = append(w.Jobs, r.Batch()...)
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return w, nil
}
