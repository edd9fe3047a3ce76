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
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// testAllocations is n allocations, 1920 s apart, of 3 rows each.
func testAllocations(n int) []Allocation {
	gpus := []string{"k80", "p100", "v100"}
	var out []Allocation
	for k := 0; k < n; k++ {
		for r := 0; r < 3; r++ {
			out = append(out, Allocation{Index: int32(k), TimeS: 1920 * float64(k), Job: int32(k + r),
				GPUType: gpus[(k+r)%3], Fraction: 1 / float64(r+1)})
		}
	}
	return out
}

func writeAllocations(t testing.TB, rows []Allocation, opt WriterOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewAllocationsWriter(&buf, opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range rows {
		if err := w.Append(a); err != nil {
			t.Fatal(err)
		}
	}
	if w.Rows() != int64(len(rows)) {
		t.Fatalf("Rows %d, want %d", w.Rows(), len(rows))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readAllocations reads every row of data, checking the batch sizes.
func readAllocations(t testing.TB, data []byte, opt ReaderOptions, batchRows int) ([]Allocation, error) {
	t.Helper()
	r, err := NewAllocationsReader("alloc.arrow", bytes.NewReader(data), opt)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []Allocation
	for r.Next() {
		if batchRows > 0 && len(r.Batch()) > batchRows {
			t.Fatalf("batch of %d rows, want at most %d", len(r.Batch()), batchRows)
		}
		out = append(out, r.Batch()...)
	}
	return out, r.Err()
}

// TestAllocationsRoundTrip: 60 rows in 4 batches read back equal, through
// a buffer and through a file.
func TestAllocationsRoundTrip(t *testing.T) {
	rows := testAllocations(20)
	data := writeAllocations(t, rows, WriterOptions{BatchRows: 16})
	got, err := readAllocations(t, data, ReaderOptions{}, 16)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Fatalf("read back %v\nwant %v", got[:4], rows[:4])
	}
	path := filepath.Join(t.TempDir(), "alloc.arrow")
	w, err := CreateAllocations(path, WriterOptions{Source: "test", Metadata: map[string]string{"policy": "max_min_fairness"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range rows[:5] {
		if err := w.Append(a); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("%s exists before Close: %v", path, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := OpenAllocations(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var back []Allocation
	batches := 0
	for r.Next() {
		back = append(back, r.Batch()...)
		batches++
	}
	if r.Err() != nil || batches != 1 || !reflect.DeepEqual(back, rows[:5]) {
		t.Fatalf("OpenAllocations: %d batches, %v, %v", batches, back, r.Err())
	}
	if md := r.Metadata(); md["policy"] != "max_min_fairness" || md[MetaSource] != "test" || md[MetaKind] != "allocations" {
		t.Fatalf("metadata %v", md)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Inspect(path)
	if err != nil || !s.Valid || s.Kind != "allocations" || s.Rows != 5 {
		t.Fatalf("Inspect: %+v, %v", s, err)
	}
	// Rows of one GPU type share one string, across batches (rows 0 and
	// 18 are k80s of batches 0 and 1).
	if got[0].GPUType != "k80" || got[18].GPUType != "k80" || unsafe.StringData(got[0].GPUType) != unsafe.StringData(got[18].GPUType) {
		t.Fatalf("GPU types %q %q not shared", got[0].GPUType, got[18].GPUType)
	}
}

// TestAllocationsWriterRefuses: each invalid row, appended as row 3, is
// refused with the row and column; the error sticks.
func TestAllocationsWriterRefuses(t *testing.T) {
	first := []Allocation{{0, 0, 0, "v100", 1}, {0, 0, 1, "k80", 0.5}, {1, 360, 0, "v100", 0.25}}
	ok := Allocation{Index: 1, TimeS: 360, Job: 2, GPUType: "p100", Fraction: 1}
	cases := []struct {
		name, want string
		mutate     func(a *Allocation)
	}{
		{"index order", "allocations: row 3 (allocation 0, job 2, p100): column index: 0 is before the previous row's 1", func(a *Allocation) { a.Index = 0 }},
		{"negative index", "allocations: row 3 (allocation -1, job 2, p100): column index: -1 is negative", func(a *Allocation) { a.Index = -1 }},
		{"time order", "allocations: row 3 (allocation 2, job 2, p100): column time_s: 300 is before the previous row's 360", func(a *Allocation) { a.Index, a.TimeS = 2, 300 }},
		{"two times", "allocations: row 3 (allocation 1, job 2, p100): column time_s: 400 in allocation 1, whose previous row has 360", func(a *Allocation) { a.TimeS = 400 }},
		{"NaN time", "allocations: row 3 (allocation 1, job 2, p100): column time_s: NaN must be finite and >= 0", func(a *Allocation) { a.TimeS = math.NaN() }},
		{"infinite time", "allocations: row 3 (allocation 2, job 2, p100): column time_s: +Inf must be finite", func(a *Allocation) { a.Index, a.TimeS = 2, math.Inf(1) }},
		{"negative job", "allocations: row 3 (allocation 1, job -1, p100): column job: -1 is negative", func(a *Allocation) { a.Job = -1 }},
		{"zero fraction", "allocations: row 3 (allocation 1, job 2, p100): column fraction: 0 outside (0, 1]", func(a *Allocation) { a.Fraction = 0 }},
		{"fraction above 1", "allocations: row 3 (allocation 1, job 2, p100): column fraction: 1.0001 outside (0, 1]", func(a *Allocation) { a.Fraction = 1.0001 }},
		{"NaN fraction", "allocations: row 3 (allocation 1, job 2, p100): column fraction: NaN outside (0, 1]", func(a *Allocation) { a.Fraction = math.NaN() }},
		{"empty gpu", "allocations: row 3 (allocation 1, job 2, ): column gpu_type: empty GPU type", func(a *Allocation) { a.GPUType = "" }},
	}
	for _, tc := range cases {
		w, err := NewAllocationsWriter(new(bytes.Buffer), WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range first {
			if err := w.Append(a); err != nil {
				t.Fatal(err)
			}
		}
		a := ok
		tc.mutate(&a)
		err = w.Append(a)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
		if err2 := w.Append(ok); err2 != err {
			t.Errorf("%s: the next Append returned %v, want the sticky %v", tc.name, err2, err)
		}
		if err2 := w.Close(); err2 != err {
			t.Errorf("%s: Close returned %v, want the sticky %v", tc.name, err2, err)
		}
	}
	w, _ := NewAllocationsWriter(new(bytes.Buffer), WriterOptions{})
	if err := w.Append(Allocation{Index: 0, TimeS: -1, GPUType: "v100", Fraction: 1}); err == nil ||
		!strings.HasPrefix(err.Error(), "allocations: row 0 (allocation 0, job 0, v100): column time_s: -1 must be finite and >= 0") {
		t.Errorf("negative first time: %v", err)
	}
}

// rawAllocations writes an allocations file of the three valid rows of
// TestAllocationsWriterRefuses and row 3 from row3, bypassing the
// writer's checks, with valid checksums.
func rawAllocations(t testing.TB, row3 func(f []array.Builder)) []byte {
	t.Helper()
	opt := WriterOptions{}
	opt.fill()
	schema := allocationsSchema(&opt)
	var buf bytes.Buffer
	fw, err := ipc.NewFileWriter(&buf, ipc.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	defer b.Release()
	f := b.Fields()
	for _, a := range []Allocation{{0, 0, 0, "v100", 1}, {0, 0, 1, "k80", 0.5}, {1, 360, 0, "v100", 0.25}} {
		f[acIndex].(*array.Int32Builder).Append(a.Index)
		f[acTime].(*array.Float64Builder).Append(a.TimeS)
		f[acJob].(*array.Int32Builder).Append(a.Job)
		f[acGPUType].(*array.StringBuilder).Append(a.GPUType)
		f[acFraction].(*array.Float64Builder).Append(a.Fraction)
	}
	row3(f)
	fill := map[int]func(){
		acIndex:    func() { f[acIndex].(*array.Int32Builder).Append(1) },
		acTime:     func() { f[acTime].(*array.Float64Builder).Append(360) },
		acJob:      func() { f[acJob].(*array.Int32Builder).Append(2) },
		acGPUType:  func() { f[acGPUType].(*array.StringBuilder).Append("p100") },
		acFraction: func() { f[acFraction].(*array.Float64Builder).Append(1) },
	}
	for i, fn := range fill {
		if f[i].Len() == 3 {
			fn()
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

// TestAllocationsReaderRefuses: values the writer refuses are refused by
// the reader too, with the file, batch, row and column.
func TestAllocationsReaderRefuses(t *testing.T) {
	got, err := readAllocations(t, rawAllocations(t, func([]array.Builder) {}), ReaderOptions{}, 0)
	want := []Allocation{{0, 0, 0, "v100", 1}, {0, 0, 1, "k80", 0.5}, {1, 360, 0, "v100", 0.25}, {1, 360, 2, "p100", 1}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("the unmutated raw file: %v, %v", got, err)
	}
	f64 := func(col int, x float64) func(f []array.Builder) {
		return func(f []array.Builder) { f[col].(*array.Float64Builder).Append(x) }
	}
	i32 := func(col int, x int32) func(f []array.Builder) {
		return func(f []array.Builder) { f[col].(*array.Int32Builder).Append(x) }
	}
	const at = "alloc.arrow: batch 0, row 3 (file row 3): "
	cases := []struct {
		name, want string
		mutate     func(f []array.Builder)
	}{
		{"index order", at + "column index: 0 is before the previous row's 1", i32(acIndex, 0)},
		{"negative index", at + "column index: -7 is negative", i32(acIndex, -7)},
		{"time order", at + "column time_s: 359.5 is before the previous row's 360", f64(acTime, 359.5)},
		{"two times", at + "column time_s: 361 in allocation 1, whose previous row has 360", f64(acTime, 361)},
		{"NaN time", at + "column time_s: NaN must be finite and >= 0", f64(acTime, math.NaN())},
		{"negative job", at + "column job: -3 is negative", i32(acJob, -3)},
		{"zero fraction", at + "column fraction: 0 outside (0, 1]", f64(acFraction, 0)},
		{"fraction above 1", at + "column fraction: 2 outside (0, 1]", f64(acFraction, 2)},
		{"infinite fraction", at + "column fraction: +Inf outside (0, 1]", f64(acFraction, math.Inf(1))},
		{"empty gpu", at + "column gpu_type: empty GPU type", func(f []array.Builder) { f[acGPUType].(*array.StringBuilder).Append("") }},
		{"null", at + "column job: null in a non-nullable column", func(f []array.Builder) { f[acJob].AppendNull() }},
	}
	for _, tc := range cases {
		got, err := readAllocations(t, rawAllocations(t, tc.mutate), ReaderOptions{}, 0)
		var de *DataError
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || !errors.As(err, &de) || de.Row != 3 || de.FileRow != 3 {
			t.Errorf("%s: got %v, want %q at row 3", tc.name, err, tc.want)
		}
		if len(got) != 0 {
			t.Errorf("%s: %d rows returned from the refused batch", tc.name, len(got))
		}
	}
}

// TestAllocationsCorrupt: a file cut anywhere is refused with an error
// naming it; a flipped byte is refused or changes nothing; never a panic.
func TestAllocationsCorrupt(t *testing.T) {
	rows := testAllocations(8)
	data := writeAllocations(t, rows, WriterOptions{BatchRows: 7})
	for n := 0; n < len(data); n++ {
		_, err := readAllocations(t, data[:n], ReaderOptions{}, 0)
		if err == nil || !strings.HasPrefix(err.Error(), "alloc.arrow") {
			t.Fatalf("cut at %d of %d bytes: %v", n, len(data), err)
		}
	}
	buf := make([]byte, len(data))
	errs := 0
	for i := range data {
		copy(buf, data)
		buf[i] ^= 0x5a
		got, err := readAllocations(t, buf, ReaderOptions{}, 0)
		if err != nil {
			if strings.Contains(err.Error(), internalError) {
				t.Fatalf("flip at %d: %v", i, err)
			}
			errs++
			continue
		}
		if !reflect.DeepEqual(got, rows) {
			t.Fatalf("flip at byte %d: values changed without an error", i)
		}
	}
	if errs == 0 {
		t.Fatal("no flip was detected")
	}
}

func FuzzReadAllocations(f *testing.F) {
	seedFile(f, writeAllocations(f, testAllocations(4), WriterOptions{BatchRows: 5}))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, skip := range []bool{false, true} {
			r, err := NewAllocationsReader("fuzz.arrow", bytes.NewReader(data), ReaderOptions{SkipChecksum: skip})
			checkFuzzErr(t, err)
			if err != nil {
				continue
			}
			var prev *Allocation
			for r.Next() {
				b := r.Batch()
				for i := range b {
					if col, err := checkAllocation(&b[i], prev); err != nil {
						t.Fatalf("accepted an invalid row: column %s: %v", col, err)
					}
					a := b[i]
					prev = &a
				}
			}
			checkFuzzErr(t, r.Err())
			r.Close()
		}
	})
}
