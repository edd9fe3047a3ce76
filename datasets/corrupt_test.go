package datasets

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/tegrl/tegrl/env"
)

// smallJobs is a small valid jobs file and the workload it holds.
func smallJobs(t testing.TB) ([]byte, *env.Workload) {
	t.Helper()
	c := testCluster(t, 20, 1)
	w := testWorkload(t, c, 600, 1)
	if len(w.Jobs) > 40 {
		w.Jobs = w.Jobs[:40]
	}
	w.Jobs[0].GPUModels = []string{"T4"}
	var buf bytes.Buffer
	if err := WriteWorkloadTo(&buf, w, WriterOptions{BatchRows: 16}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), w
}

// TestTruncated: a file cut anywhere is refused with an error that names
// it, never a panic or a partial result.
func TestTruncated(t *testing.T) {
	data, _ := smallJobs(t)
	step := 1
	if testing.Short() {
		step = 7
	}
	for n := 0; n < len(data); n += step {
		_, err := ReadWorkloadFrom("jobs.arrow", bytes.NewReader(data[:n]), ReaderOptions{})
		if err == nil {
			t.Fatalf("file cut at %d of %d bytes was accepted", n, len(data))
		}
		if !strings.HasPrefix(err.Error(), "jobs.arrow") {
			t.Fatalf("cut at %d: error %q does not name the file", n, err)
		}
	}
}

// TestFlippedBytes: flipping any byte either gives an error or leaves the
// values read unchanged (padding, and the schema copy at the head of the
// file that readers do not use).
func TestFlippedBytes(t *testing.T) {
	data, want := smallJobs(t)
	step := 1
	if testing.Short() {
		step = 3
	}
	errs, same := 0, 0
	buf := make([]byte, len(data))
	for i := 0; i < len(data); i += step {
		copy(buf, data)
		buf[i] ^= 0x5a
		got, err := ReadWorkloadFrom("jobs.arrow", bytes.NewReader(buf), ReaderOptions{})
		if err != nil {
			if strings.Contains(err.Error(), internalError) {
				t.Fatalf("flip at %d: %v", i, err)
			}
			errs++
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("flip at byte %d of %d: the file read without error but its values changed", i, len(data))
		}
		same++
	}
	t.Logf("%d flips refused, %d harmless", errs, same)
	if errs == 0 {
		t.Fatal("no flip was detected")
	}
}

// TestFlippedTransitions: the same for a transitions file, on a sample of
// positions (its rows are large).
func TestFlippedTransitions(t *testing.T) {
	in := captured(t, 30, 900, 4)
	data := writeTransitions(t, in, WriterOptions{BatchRows: 2})
	step := len(data) / 400
	buf := make([]byte, len(data))
	for i := 0; i < len(data); i += step {
		copy(buf, data)
		buf[i] ^= 0x01
		got, err := readTransitions(t, buf, ReaderOptions{})
		if err != nil {
			if strings.Contains(err.Error(), internalError) {
				t.Fatalf("flip at %d: %v", i, err)
			}
			continue
		}
		if len(got) != len(in) {
			t.Fatalf("flip at %d: %d rows, want %d", i, len(got), len(in))
		}
		for k := range in {
			if !got[k].Equal(&in[k]) {
				t.Fatalf("flip at byte %d: row %d changed without an error", i, k)
			}
		}
	}
}

// rawJobs writes a jobs file whose rows bypass the writer's checks, as a
// buggy or foreign writer would, with a valid checksum.
func rawJobs(t testing.TB, mutate func(b *array.RecordBuilder)) []byte {
	t.Helper()
	opt := WriterOptions{}
	opt.fill()
	schema := jobsSchema("raw", &opt)
	var buf bytes.Buffer
	fw, err := ipc.NewFileWriter(&buf, ipc.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	defer b.Release()
	f := b.Fields()
	for i := 0; i < 3; i++ {
		f[jcID].(*array.Int64Builder).Append(int64(i))
		f[jcName].(*array.StringBuilder).Append("j")
		f[jcKind].(*array.StringBuilder).Append("batch")
		f[jcQoS].(*array.StringBuilder).Append("BE")
		f[jcArrival].(*array.Float64Builder).Append(float64(i))
		f[jcDuration].(*array.Float64Builder).Append(10)
		f[jcCPU].(*array.Int64Builder).Append(1000)
		f[jcMem].(*array.Int64Builder).Append(1024)
		f[jcGPUs].(*array.Int32Builder).Append(0)
		f[jcGPUMilli].(*array.Int32Builder).Append(0)
		f[jcGPUModels].(*array.ListBuilder).AppendNull()
		f[jcDeadline].(*array.Float64Builder).Append(100)
		f[jcLatencySLO].(*array.Float64Builder).Append(0)
		f[jcService].(*array.Int32Builder).Append(-1)
		f[jcTenant].(*array.Int32Builder).Append(0)
		f[jcMigratable].(*array.BooleanBuilder).Append(true)
		f[jcNetGbps].(*array.Float64Builder).Append(0.05)
	}
	mutate(b)
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

// TestReaderRefusesValues: values the writer would refuse are refused by
// the reader too, with the file, batch, row and column.
func TestReaderRefusesValues(t *testing.T) {
	ok := rawJobs(t, func(*array.RecordBuilder) {})
	if _, err := ReadWorkloadFrom("jobs.arrow", bytes.NewReader(ok), ReaderOptions{}); err != nil {
		t.Fatalf("the unmutated raw file: %v", err)
	}
	cases := []struct {
		name, want string
		mutate     func(f []array.Builder)
	}{
		{"negative cpu", "jobs.arrow: batch 0, row 3 (file row 3): column cpu_milli: -5 is negative", func(f []array.Builder) {
			f[jcCPU].(*array.Int64Builder).Append(-5)
		}},
		{"negative memory", "column mem_mib: -1 is negative", func(f []array.Builder) { f[jcMem].(*array.Int64Builder).Append(-1) }},
		{"NaN duration", "column duration_s: NaN must be finite", func(f []array.Builder) {
			f[jcDuration].(*array.Float64Builder).Append(math.NaN())
		}},
		{"infinite network", "column net_gbps: +Inf must be finite", func(f []array.Builder) {
			f[jcNetGbps].(*array.Float64Builder).Append(math.Inf(1))
		}},
		{"unknown kind", `column kind: unknown kind "cron"`, func(f []array.Builder) { f[jcKind].(*array.StringBuilder).Append("cron") }},
		{"arrival order", "column arrival_s: 1 is before the previous job's 2", func(f []array.Builder) {
			f[jcArrival].(*array.Float64Builder).Append(1)
		}},
		{"id", "column id: id 7 in row 3", func(f []array.Builder) { f[jcID].(*array.Int64Builder).Append(7) }},
		{"gpu milli", "column gpus/gpu_milli", func(f []array.Builder) {
			f[jcGPUs].(*array.Int32Builder).Append(2)
			f[jcGPUMilli].(*array.Int32Builder).Append(500)
		}},
		{"null", "column name: null in a non-nullable column", func(f []array.Builder) { f[jcName].(*array.StringBuilder).AppendNull() }},
	}
	for _, tc := range cases {
		data := rawJobs(t, func(b *array.RecordBuilder) {
			f := b.Fields()
			done := map[int]bool{}
			// Append a fourth row: the case's values, then valid ones for
			// the other columns.
			tc.mutate(f)
			for i, fb := range f {
				if fb.Len() == 4 {
					done[i] = true
				}
			}
			fill := map[int]func(){
				jcID:         func() { f[jcID].(*array.Int64Builder).Append(3) },
				jcName:       func() { f[jcName].(*array.StringBuilder).Append("x") },
				jcKind:       func() { f[jcKind].(*array.StringBuilder).Append("batch") },
				jcQoS:        func() { f[jcQoS].(*array.StringBuilder).Append("BE") },
				jcArrival:    func() { f[jcArrival].(*array.Float64Builder).Append(3) },
				jcDuration:   func() { f[jcDuration].(*array.Float64Builder).Append(1) },
				jcCPU:        func() { f[jcCPU].(*array.Int64Builder).Append(1) },
				jcMem:        func() { f[jcMem].(*array.Int64Builder).Append(1) },
				jcGPUs:       func() { f[jcGPUs].(*array.Int32Builder).Append(0) },
				jcGPUMilli:   func() { f[jcGPUMilli].(*array.Int32Builder).Append(0) },
				jcGPUModels:  func() { f[jcGPUModels].(*array.ListBuilder).AppendNull() },
				jcDeadline:   func() { f[jcDeadline].(*array.Float64Builder).Append(0) },
				jcLatencySLO: func() { f[jcLatencySLO].(*array.Float64Builder).Append(0) },
				jcService:    func() { f[jcService].(*array.Int32Builder).Append(-1) },
				jcTenant:     func() { f[jcTenant].(*array.Int32Builder).Append(0) },
				jcMigratable: func() { f[jcMigratable].(*array.BooleanBuilder).Append(false) },
				jcNetGbps:    func() { f[jcNetGbps].(*array.Float64Builder).Append(0) },
			}
			for i, fn := range fill {
				if !done[i] {
					fn()
				}
			}
		})
		_, err := ReadWorkloadFrom("jobs.arrow", bytes.NewReader(data), ReaderOptions{})
		var de *DataError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &de) || de.Row != 3 {
			t.Errorf("%s: got %v, want an error containing %q at row 3", tc.name, err, tc.want)
		}
	}
}

// TestChecksumRequired: a batch whose content does not match its CRC is
// refused, and SkipChecksum reads it.
func TestChecksumRequired(t *testing.T) {
	data := rawJobs(t, func(b *array.RecordBuilder) {})
	// Find the float64 arrival 2.0 of row 2 and change it to 2.5: the
	// values stay valid, only the checksum can tell.
	// Arrivals 1.0 then 2.0, little endian.
	pat := []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0x40}
	i := bytes.Index(data, pat)
	if i < 0 {
		t.Fatal("arrival not found")
	}
	bad := bytes.Clone(data)
	bad[i+14] = 0x04 // 2.0 -> 2.5 (0x4004000000000000)
	_, err := ReadWorkloadFrom("jobs.arrow", bytes.NewReader(bad), ReaderOptions{})
	if err == nil || !strings.Contains(err.Error(), "jobs.arrow: batch 0: checksum") {
		t.Fatalf("got %v, want a checksum error", err)
	}
	w, err := ReadWorkloadFrom("jobs.arrow", bytes.NewReader(bad), ReaderOptions{SkipChecksum: true})
	if err != nil || w.Jobs[2].Arrival != 2.5 {
		t.Fatalf("SkipChecksum: %v", err)
	}
}

func TestUnknownTegrlKey(t *testing.T) {
	if _, err := NewJobsWriter(new(bytes.Buffer), "w", WriterOptions{Metadata: map[string]string{"tegrl.x": "1"}}); err == nil {
		t.Fatal("writer accepted a reserved metadata key")
	}
	var buf bytes.Buffer
	if err := WriteWorkloadTo(&buf, &env.Workload{Name: "w"}, WriterOptions{Metadata: map[string]string{"owner": "me"}}); err != nil {
		t.Fatal(err)
	}
	r, err := NewJobsReader("j", bytes.NewReader(buf.Bytes()), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Metadata()["owner"] != "me" || r.WorkloadName() != "w" {
		t.Fatalf("metadata %v", r.Metadata())
	}
}
