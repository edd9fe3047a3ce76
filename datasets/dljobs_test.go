package datasets

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/tegrl/tegrl/env"
)

// dlTable parses a throughput table with one v100 entry per job type.
func dlTable(t testing.TB, models ...string) *env.ThroughputTable {
	t.Helper()
	var sb strings.Builder
	sb.WriteString(`{"v100": {`)
	for i, m := range models {
		if i > 0 {
			sb.WriteString(",")
		}
		sb.WriteString(`"('` + m + `', 1)": {"null": 1}`)
	}
	sb.WriteString("}}")
	tab, err := env.LoadThroughputTable(strings.NewReader(sb.String()))
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// dlJobs is n valid jobs over job types 0..types-1.
func dlJobs(n, types int) []env.DLJob {
	jobs := make([]env.DLJob, n)
	for i := range jobs {
		jobs[i] = env.DLJob{ID: i, Model: i % types, Scale: 1 << (i % 4), Arrival: float64(i/3) * 7.5,
			Steps: 100 + float64(i), Duration: 60 * float64(i%5), Priority: float64(i % 2)}
	}
	return jobs
}

func writeDLJobs(t testing.TB, tab *env.ThroughputTable, jobs []env.DLJob, opt WriterOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewDLJobsWriter(&buf, tab, opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if err := w.Append(j); err != nil {
			t.Fatal(err)
		}
	}
	if w.Rows() != int64(len(jobs)) {
		t.Fatalf("Rows %d, want %d", w.Rows(), len(jobs))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDLJobsRoundTrip: 50 jobs in 4 batches read back equal, and a table
// whose types moved (a new type sorted before "b") maps the names to the
// new indices.
func TestDLJobsRoundTrip(t *testing.T) {
	tab := dlTable(t, "a", "b", "c")
	jobs := dlJobs(50, 3)
	data := writeDLJobs(t, tab, jobs, WriterOptions{BatchRows: 16})
	got, err := ReadDLJobsFrom("dl.arrow", bytes.NewReader(data), tab, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, jobs) {
		t.Fatalf("read back %v\nwant %v", got[:4], jobs[:4])
	}
	moved := dlTable(t, "a", "ab", "b", "c", "d")
	got, err = ReadDLJobsFrom("dl.arrow", bytes.NewReader(data), moved, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, j := range got {
		want := jobs[i]
		want.Model = []int{0, 2, 3}[want.Model] // a, b, c in the new table
		if j != want {
			t.Fatalf("row %d: %+v, want %+v", i, j, want)
		}
	}
	// The bundled Gavel table, through a file on disk.
	gavel, err := env.GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dl.arrow")
	w, err := CreateDLJobs(path, gavel, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gj := dlJobs(7, len(gavel.Models))
	for _, j := range gj {
		if err := w.Append(j); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("%s exists before Close: %v", path, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err = ReadDLJobs(path, gavel, ReaderOptions{})
	if err != nil || !reflect.DeepEqual(got, gj) {
		t.Fatalf("ReadDLJobs: %v, %v", got, err)
	}
	s, err := Inspect(path)
	if err != nil || !s.Valid || s.Kind != "dljobs" || s.Rows != 7 || s.Batches != 1 {
		t.Fatalf("Inspect: %+v, %v", s, err)
	}
	// An empty file is valid.
	got, err = ReadDLJobsFrom("e", bytes.NewReader(writeDLJobs(t, tab, nil, WriterOptions{})), tab, ReaderOptions{})
	if err != nil || len(got) != 0 {
		t.Fatalf("empty file: %v, %v", got, err)
	}
}

// TestDLJobsWriterRefuses: each invalid job, appended as row 3, is refused
// with the row and column; the error sticks.
func TestDLJobsWriterRefuses(t *testing.T) {
	tab := dlTable(t, "a", "b", "c")
	ok := env.DLJob{ID: 3, Model: 1, Scale: 2, Arrival: 10, Steps: 5, Duration: 1, Priority: 1}
	cases := []struct {
		name, want string
		mutate     func(j *env.DLJob)
	}{
		{"id", "dljobs: row 3 (job 4): column id: id 4 in row 3", func(j *env.DLJob) { j.ID = 4 }},
		{"model", "dljobs: row 3 (job 3): column model: job type 3 outside the table's 3 types", func(j *env.DLJob) { j.Model = 3 }},
		{"negative model", "dljobs: row 3 (job 3): column model: job type -1 outside", func(j *env.DLJob) { j.Model = -1 }},
		{"scale", "dljobs: row 3 (job 3): column scale: gang of 0 GPUs", func(j *env.DLJob) { j.Scale = 0 }},
		{"zero steps", "dljobs: row 3 (job 3): column steps: 0 must be finite and > 0", func(j *env.DLJob) { j.Steps = 0 }},
		{"infinite steps", "dljobs: row 3 (job 3): column steps: +Inf must be finite and > 0", func(j *env.DLJob) { j.Steps = math.Inf(1) }},
		{"NaN arrival", "dljobs: row 3 (job 3): column arrival_s: NaN must be finite and >= 0", func(j *env.DLJob) { j.Arrival = math.NaN() }},
		{"arrival order", "dljobs: row 3 (job 3): column arrival_s: 2 is before the previous job's 3", func(j *env.DLJob) { j.Arrival = 2 }},
		{"negative priority", "dljobs: row 3 (job 3): column priority: -1 must be finite and >= 0", func(j *env.DLJob) { j.Priority = -1 }},
		{"NaN priority", "dljobs: row 3 (job 3): column priority: NaN must be finite", func(j *env.DLJob) { j.Priority = math.NaN() }},
		{"negative duration", "dljobs: row 3 (job 3): column duration_s: -0.5 must be finite and >= 0", func(j *env.DLJob) { j.Duration = -0.5 }},
		{"infinite duration", "dljobs: row 3 (job 3): column duration_s: +Inf must be finite", func(j *env.DLJob) { j.Duration = math.Inf(1) }},
	}
	for _, tc := range cases {
		w, err := NewDLJobsWriter(new(bytes.Buffer), tab, WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if err := w.Append(env.DLJob{ID: i, Scale: 1, Arrival: float64(i + 1), Steps: 1, Priority: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Append(ok); err != nil {
			t.Fatalf("%s: the unmutated job: %v", tc.name, err)
		}
		w.Close()
		w, _ = NewDLJobsWriter(new(bytes.Buffer), tab, WriterOptions{})
		for i := 0; i < 3; i++ {
			w.Append(env.DLJob{ID: i, Scale: 1, Arrival: float64(i + 1), Steps: 1, Priority: 1})
		}
		j := ok
		tc.mutate(&j)
		err = w.Append(j)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
		if err2 := w.Close(); err2 != err {
			t.Errorf("%s: Close returned %v, want the sticky %v", tc.name, err2, err)
		}
	}
	if _, err := NewDLJobsWriter(new(bytes.Buffer), nil, WriterOptions{}); err == nil || !errors.Is(err, errNoTable) {
		t.Errorf("nil table: %v", err)
	}
	if _, err := ReadDLJobsFrom("x", bytes.NewReader(nil), nil, ReaderOptions{}); err == nil || !errors.Is(err, errNoTable) {
		t.Errorf("nil table: %v", err)
	}
}

// rawDLJobs writes a dljobs file of rows 0-2 valid and row 3 from row3,
// bypassing the writer's checks, with valid checksums.
func rawDLJobs(t testing.TB, row3 func(f []array.Builder)) []byte {
	t.Helper()
	opt := WriterOptions{}
	opt.fill()
	schema := dljobsSchema(&opt)
	var buf bytes.Buffer
	fw, err := ipc.NewFileWriter(&buf, ipc.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	defer b.Release()
	f := b.Fields()
	for i := 0; i < 3; i++ {
		f[dcID].(*array.Int32Builder).Append(int32(i))
		f[dcModel].(*array.StringBuilder).Append("b")
		f[dcScale].(*array.Int32Builder).Append(1)
		f[dcArrival].(*array.Float64Builder).Append(float64(i))
		f[dcSteps].(*array.Float64Builder).Append(10)
		f[dcDuration].(*array.Float64Builder).Append(5)
		f[dcPriority].(*array.Float64Builder).Append(1)
	}
	if row3 != nil {
		row3(f)
		fill := map[int]func(){
			dcID:       func() { f[dcID].(*array.Int32Builder).Append(3) },
			dcModel:    func() { f[dcModel].(*array.StringBuilder).Append("c") },
			dcScale:    func() { f[dcScale].(*array.Int32Builder).Append(4) },
			dcArrival:  func() { f[dcArrival].(*array.Float64Builder).Append(3) },
			dcSteps:    func() { f[dcSteps].(*array.Float64Builder).Append(1) },
			dcDuration: func() { f[dcDuration].(*array.Float64Builder).Append(0) },
			dcPriority: func() { f[dcPriority].(*array.Float64Builder).Append(0) },
		}
		for i, fn := range fill {
			if f[i].Len() == 3 {
				fn()
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	h := newCRCHasher()
	out := array.NewRecordBatchWithMetadata(schema, rec.Columns(), rec.NumRows(),
		arrow.NewMetadata([]string{MetaBatchCRC}, []string{crcHex(h.record(rec))}))
	defer out.Release()
	if err := fw.Write(out); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDLJobsReaderRefuses: values the writer refuses are refused by the
// reader too, with the file, batch, row and column.
func TestDLJobsReaderRefuses(t *testing.T) {
	tab := dlTable(t, "a", "b", "c")
	got, err := ReadDLJobsFrom("dl.arrow", bytes.NewReader(rawDLJobs(t, func([]array.Builder) {})), tab, ReaderOptions{})
	want := []env.DLJob{{ID: 0, Model: 1, Scale: 1, Arrival: 0, Steps: 10, Duration: 5, Priority: 1},
		{ID: 1, Model: 1, Scale: 1, Arrival: 1, Steps: 10, Duration: 5, Priority: 1},
		{ID: 2, Model: 1, Scale: 1, Arrival: 2, Steps: 10, Duration: 5, Priority: 1},
		{ID: 3, Model: 2, Scale: 4, Arrival: 3, Steps: 1, Duration: 0, Priority: 0}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("the unmutated raw file: %v, %v", got, err)
	}
	f64 := func(col int, x float64) func(f []array.Builder) {
		return func(f []array.Builder) { f[col].(*array.Float64Builder).Append(x) }
	}
	cases := []struct {
		name, want string
		mutate     func(f []array.Builder)
	}{
		{"unknown model", `dl.arrow: batch 0, row 3 (file row 3): column model: unknown job type "resnet-9000": not in the throughput table (a, b, c)`,
			func(f []array.Builder) { f[dcModel].(*array.StringBuilder).Append("resnet-9000") }},
		{"empty model", "dl.arrow: batch 0, row 3 (file row 3): column model: empty job type name",
			func(f []array.Builder) { f[dcModel].(*array.StringBuilder).Append("") }},
		{"id", "dl.arrow: batch 0, row 3 (file row 3): column id: id 9 in row 3",
			func(f []array.Builder) { f[dcID].(*array.Int32Builder).Append(9) }},
		{"scale", "dl.arrow: batch 0, row 3 (file row 3): column scale: gang of -2 GPUs",
			func(f []array.Builder) { f[dcScale].(*array.Int32Builder).Append(-2) }},
		{"negative steps", "dl.arrow: batch 0, row 3 (file row 3): column steps: -1 must be finite and > 0", f64(dcSteps, -1)},
		{"NaN steps", "dl.arrow: batch 0, row 3 (file row 3): column steps: NaN must be finite and > 0", f64(dcSteps, math.NaN())},
		{"infinite arrival", "dl.arrow: batch 0, row 3 (file row 3): column arrival_s: +Inf must be finite and >= 0", f64(dcArrival, math.Inf(1))},
		{"arrival order", "dl.arrow: batch 0, row 3 (file row 3): column arrival_s: 1.5 is before the previous job's 2", f64(dcArrival, 1.5)},
		{"negative priority", "dl.arrow: batch 0, row 3 (file row 3): column priority: -0.25 must be finite and >= 0", f64(dcPriority, -0.25)},
		{"infinite priority", "dl.arrow: batch 0, row 3 (file row 3): column priority: -Inf must be finite", f64(dcPriority, math.Inf(-1))},
		{"negative duration", "dl.arrow: batch 0, row 3 (file row 3): column duration_s: -3 must be finite and >= 0", f64(dcDuration, -3)},
		{"NaN duration", "dl.arrow: batch 0, row 3 (file row 3): column duration_s: NaN must be finite", f64(dcDuration, math.NaN())},
		{"null", "dl.arrow: batch 0, row 3 (file row 3): column steps: null in a non-nullable column",
			func(f []array.Builder) { f[dcSteps].AppendNull() }},
	}
	for _, tc := range cases {
		data := rawDLJobs(t, tc.mutate)
		got, err := ReadDLJobsFrom("dl.arrow", bytes.NewReader(data), tab, ReaderOptions{})
		var de *DataError
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || !errors.As(err, &de) || de.Row != 3 || de.FileRow != 3 {
			t.Errorf("%s: got %v, want %q at row 3", tc.name, err, tc.want)
		}
		if got != nil {
			t.Errorf("%s: %d jobs returned with the error", tc.name, len(got))
		}
	}
	// Without a table (inspect), names are only required to be non-empty.
	path := filepath.Join(t.TempDir(), "dl.arrow")
	if err := os.WriteFile(path, rawDLJobs(t, func(f []array.Builder) { f[dcModel].(*array.StringBuilder).Append("zz") }), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := validateDLJobs(path); err != nil {
		t.Errorf("validate without a table: %v", err)
	}
	if _, err := ReadDLJobs(path, tab, ReaderOptions{}); err == nil || !strings.Contains(err.Error(), `unknown job type "zz"`) {
		t.Errorf("ReadDLJobs: %v", err)
	}
}

// TestDLJobsCorrupt: a file cut anywhere is refused with an error naming
// it; a flipped byte is refused or changes nothing; never a panic. A jobs
// file is not a dljobs file.
func TestDLJobsCorrupt(t *testing.T) {
	tab := dlTable(t, "a", "b", "c")
	jobs := dlJobs(20, 3)
	data := writeDLJobs(t, tab, jobs, WriterOptions{BatchRows: 8})
	for n := 0; n < len(data); n++ {
		_, err := ReadDLJobsFrom("dl.arrow", bytes.NewReader(data[:n]), tab, ReaderOptions{})
		if err == nil || !strings.HasPrefix(err.Error(), "dl.arrow") {
			t.Fatalf("cut at %d of %d bytes: %v", n, len(data), err)
		}
	}
	buf := make([]byte, len(data))
	errs := 0
	for i := range data {
		copy(buf, data)
		buf[i] ^= 0x5a
		got, err := ReadDLJobsFrom("dl.arrow", bytes.NewReader(buf), tab, ReaderOptions{})
		if err != nil {
			if strings.Contains(err.Error(), internalError) {
				t.Fatalf("flip at %d: %v", i, err)
			}
			errs++
			continue
		}
		if !reflect.DeepEqual(got, jobs) {
			t.Fatalf("flip at byte %d: values changed without an error", i)
		}
	}
	if errs == 0 {
		t.Fatal("no flip was detected")
	}
	jdata, _ := smallJobs(t)
	if _, err := ReadDLJobsFrom("jobs.arrow", bytes.NewReader(jdata), tab, ReaderOptions{}); err == nil ||
		err.Error() != `jobs.arrow: holds "jobs", want "dljobs"` {
		t.Fatalf("a jobs file read as dljobs: %v", err)
	}
}

func FuzzReadDLJobs(f *testing.F) {
	tab := dlTable(f, "a", "b", "c")
	seedFile(f, writeDLJobs(f, tab, dlJobs(9, 3), WriterOptions{BatchRows: 4}))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, skip := range []bool{false, true} {
			jobs, err := ReadDLJobsFrom("fuzz.arrow", bytes.NewReader(data), tab, ReaderOptions{SkipChecksum: skip})
			checkFuzzErr(t, err)
			if err != nil {
				continue
			}
			// What the reader accepts, the writer and env.NewJobList accept.
			prev := 0.0
			for i := range jobs {
				if jobs[i].Model < 0 || jobs[i].Model >= len(tab.Models) {
					t.Fatalf("row %d: job type %d", i, jobs[i].Model)
				}
				if col, err := checkDLJob(&jobs[i], int64(i), prev); err != nil {
					t.Fatalf("accepted an invalid job: column %s: %v", col, err)
				}
				prev = jobs[i].Arrival
			}
			if _, err := env.NewJobList(tab, jobs); err != nil {
				t.Fatalf("env refuses accepted jobs: %v", err)
			}
		}
	})
}
