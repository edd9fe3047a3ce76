package datasets

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/tegrl/tegrl/env"
)

// Kind is what a dataset file holds; it is stored under MetaKind.
type Kind string

// The dataset kinds.
const (
	KindTransitions Kind = "transitions"
	KindJobs        Kind = "jobs"
	KindMachines    Kind = "machines"
	KindUsage       Kind = "usage"
)

// FormatVersion is the version of the file layouts this package writes and
// reads. Readers refuse any other version: a layout change bumps it.
const FormatVersion = 1

// Schema metadata keys. Every file has the first four; the others belong
// to one kind. Keys under "tegrl." are reserved: a reader refuses a file
// with one it does not know, so that a corrupted key is not ignored.
const (
	MetaKind          = "tegrl.kind"
	MetaFormatVersion = "tegrl.format_version"
	MetaSchemaHash    = "tegrl.observation_schema_hash"
	MetaChecksum      = "tegrl.checksum" // "crc32c" (per batch) or "none"
	MetaSource        = "tegrl.source"   // where the data came from (free text)
	// MetaBatchCRC is the per-batch key (record batch metadata, not schema
	// metadata) holding the batch's CRC-32C in 8 hex digits.
	MetaBatchCRC = "tegrl.crc32c"
	// MetaSchemaCRC, the last schema metadata key, holds the CRC-32C of
	// the others (metadataCRC), so that a corrupted value (a workload
	// name, a topology figure) is not read as data.
	MetaSchemaCRC = "tegrl.metadata_crc32c"
)

// Default batch sizes.
const (
	DefaultBatchRows = 1024
	// DefaultBatchBytes bounds a transitions batch: one row of a large
	// cluster's observation is hundreds of kilobytes, and a batch must fit
	// the readers' message size limits (256 MiB in arrow-go by default).
	DefaultBatchBytes = 64 << 20
)

// maxBodySize is the largest record batch body a reader accepts. The
// reader also checks every block against the file size, so a corrupted
// length cannot make it allocate more than the file holds.
const maxBodySize = 1 << 30

// WriterOptions configures a dataset writer. The zero value is valid.
type WriterOptions struct {
	// BatchRows is the number of rows per record batch (default 1024).
	BatchRows int
	// BatchBytes flushes a batch early once its rows hold about this many
	// bytes (default 64 MiB); it matters for transitions, whose rows are
	// large.
	BatchBytes int
	// Allocator for the Arrow builders (default memory.NewGoAllocator).
	Allocator memory.Allocator
	// Source is stored under MetaSource: where the data came from.
	Source string
	// Metadata holds extra schema metadata; keys must not start with
	// "tegrl.".
	Metadata map[string]string
}

func (o *WriterOptions) fill() error {
	if o.BatchRows == 0 {
		o.BatchRows = DefaultBatchRows
	}
	if o.BatchBytes == 0 {
		o.BatchBytes = DefaultBatchBytes
	}
	if o.BatchRows < 0 || o.BatchBytes < 0 {
		return fmt.Errorf("batch size %d rows / %d bytes must be positive", o.BatchRows, o.BatchBytes)
	}
	if o.Allocator == nil {
		o.Allocator = memory.NewGoAllocator()
	}
	for k := range o.Metadata {
		if strings.HasPrefix(k, "tegrl.") {
			return fmt.Errorf("metadata key %q: the tegrl. prefix is reserved", k)
		}
	}
	return nil
}

// ReaderOptions configures a dataset reader. The zero value is valid.
type ReaderOptions struct {
	// SchemaHash is the observation schema hash the file must carry. Empty
	// means env.ObservationSchemaHash() for transitions (whose rows are
	// decoded into env.Tensors) and no check for the other kinds.
	SchemaHash string
	// Allocator for the record batches (default memory.NewGoAllocator).
	Allocator memory.Allocator
	// SkipChecksum skips the per-batch CRC (the fuzz tests use it to reach
	// the value checks; files are still checked for structure and values).
	SkipChecksum bool
}

// DataError reports a bad value or structure in a dataset file: the file,
// the record batch (0-based; -1 for the file as a whole), the row within
// the batch and in the file (-1 when not about one row) and the column.
type DataError struct {
	File    string
	Batch   int
	Row     int   // row within the batch
	FileRow int64 // row within the file
	Column  string
	Err     error
}

func (e *DataError) Error() string {
	var sb strings.Builder
	sb.WriteString(e.File)
	if e.Batch >= 0 {
		sb.WriteString(": batch " + strconv.Itoa(e.Batch))
		if e.Row >= 0 {
			sb.WriteString(", row " + strconv.Itoa(e.Row) + " (file row " + strconv.FormatInt(e.FileRow, 10) + ")")
		}
	}
	if e.Column != "" {
		sb.WriteString(": column " + e.Column)
	}
	sb.WriteString(": " + e.Err.Error())
	return sb.String()
}

func (e *DataError) Unwrap() error { return e.Err }

// ErrSchemaHash is wrapped by the error of a file whose observation schema
// hash differs from the expected one.
var ErrSchemaHash = errors.New("observation schema hash mismatch")

// baseMetadata is the metadata every file starts with, then the kind's own
// keys, then Source and the caller's extra keys (sorted, so that the same
// options give the same bytes).
func baseMetadata(kind Kind, opt *WriterOptions, own [][2]string) arrow.Metadata {
	keys := []string{MetaKind, MetaFormatVersion, MetaSchemaHash, MetaChecksum}
	vals := []string{string(kind), strconv.Itoa(FormatVersion), env.ObservationSchemaHash(), "crc32c"}
	for _, kv := range own {
		keys, vals = append(keys, kv[0]), append(vals, kv[1])
	}
	if opt.Source != "" {
		keys, vals = append(keys, MetaSource), append(vals, opt.Source)
	}
	extra := make([]string, 0, len(opt.Metadata))
	for k := range opt.Metadata {
		extra = append(extra, k)
	}
	slices.Sort(extra)
	for _, k := range extra {
		keys, vals = append(keys, k), append(vals, opt.Metadata[k])
	}
	keys, vals = append(keys, MetaSchemaCRC), append(vals, crcHex(metadataCRC(keys, vals)))
	return arrow.NewMetadata(keys, vals)
}

// metadataCRC is the CRC-32C of schema metadata in file order, the
// MetaSchemaCRC entry left out: per entry, the key's byte length (uint32,
// little endian), the key, the value's byte length, the value.
func metadataCRC(keys, vals []string) uint32 {
	var b []byte
	for i, k := range keys {
		if k == MetaSchemaCRC {
			continue
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(len(k)))
		b = append(b, k...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(vals[i])))
		b = append(b, vals[i]...)
	}
	return crc32.Checksum(b, castagnoli)
}

// batchWriter is the streaming core of every writer: typed writers append
// a row to the builders, then call endRow, which flushes a record batch
// once it is full.
type batchWriter struct {
	name    string
	schema  *arrow.Schema
	opt     WriterOptions
	rb      *array.RecordBuilder
	fw      *ipc.FileWriter
	bw      *bufio.Writer
	file    *os.File // set when the writer created the file
	path    string   // final path; the file is written to path+".partial"
	rows    int      // rows in the open batch
	bytes   int      // approximate bytes in the open batch
	total   int64
	batches int
	crc     crcHasher
	sizes   []int // the last batch's builder lengths, lists' items included
	reserve bool  // reserve sizes at the next batch's first row
	err     error // sticky: after a failure, every call returns it
	closed  bool
}

func newBatchWriter(name string, w io.Writer, schema *arrow.Schema, opt WriterOptions) (*batchWriter, error) {
	if err := opt.fill(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	fw, err := ipc.NewFileWriter(bw, ipc.WithSchema(schema), ipc.WithAllocator(opt.Allocator))
	if err != nil {
		return nil, fmt.Errorf("%s: open Arrow writer: %w", name, err)
	}
	return &batchWriter{name: name, schema: schema, opt: opt, fw: fw, bw: bw,
		rb: array.NewRecordBuilder(opt.Allocator, schema), crc: newCRCHasher()}, nil
}

// createBatchWriter writes to path+".partial" and renames it to path when
// Close succeeds, so that a failed or interrupted write never leaves a
// file that looks complete.
func createBatchWriter(path string, schema *arrow.Schema, opt WriterOptions) (*batchWriter, error) {
	f, err := os.Create(path + ".partial")
	if err != nil {
		return nil, fmt.Errorf("create dataset: %w", err)
	}
	w, err := newBatchWriter(filepath.Base(path), f, schema, opt)
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	w.file, w.path = f, path
	return w, nil
}

// startRow is called by typed writers before they append a row: the first
// row of a batch after the first reserves the builders.
func (w *batchWriter) startRow() {
	if w.rows == 0 && w.reserve {
		k := 0
		for _, b := range w.rb.Fields() {
			k = reserveSizes(w.sizes, k, b)
		}
		w.reserve = false
	}
}

// endRow accounts one appended row of about n bytes and flushes the batch
// when it is full.
func (w *batchWriter) endRow(n int) error {
	w.rows++
	w.bytes += n
	w.total++
	if w.rows == 1 && w.sizes == nil && w.opt.BatchRows > 1 {
		// The first row of the file: reserve for the batch its size
		// predicts, rather than grow by doubling.
		rows := min(w.opt.BatchRows, max(1, w.opt.BatchBytes/max(n, 1))) - 1
		for _, b := range w.rb.Fields() {
			reserveLike(b, rows)
		}
	}
	if w.rows >= w.opt.BatchRows || w.bytes >= w.opt.BatchBytes {
		return w.flush()
	}
	return nil
}

// flush writes the open batch, with its checksum in the batch metadata.
func (w *batchWriter) flush() error {
	if w.rows == 0 {
		return nil
	}
	// Builders start each batch empty; reserving what the last batch
	// held saves the copies of doubling growth (transitions rows are
	// hundreds of kilobytes).
	sizes := w.sizes[:0]
	for _, b := range w.rb.Fields() {
		sizes = appendSizes(sizes, b)
	}
	w.sizes, w.reserve = sizes, true
	rec := w.rb.NewRecordBatch()
	defer rec.Release()
	sum := w.crc.record(rec)
	out := array.NewRecordBatchWithMetadata(w.schema, rec.Columns(), rec.NumRows(),
		arrow.NewMetadata([]string{MetaBatchCRC}, []string{crcHex(sum)}))
	defer out.Release()
	if err := w.fw.Write(out); err != nil {
		return w.fail(fmt.Errorf("%s: write batch %d: %w", w.name, w.batches, err))
	}
	w.batches++
	w.rows, w.bytes = 0, 0
	return nil
}

func (w *batchWriter) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return w.err
}

// reserveLike reserves room for rows more rows like those in b.
func reserveLike(b array.Builder, rows int) {
	b.Reserve(b.Len() * rows)
	if l, ok := b.(*array.ListBuilder); ok {
		reserveLike(l.ValueBuilder(), rows)
	}
}

func appendSizes(sizes []int, b array.Builder) []int {
	sizes = append(sizes, b.Len())
	if l, ok := b.(*array.ListBuilder); ok {
		sizes = appendSizes(sizes, l.ValueBuilder())
	}
	return sizes
}

func reserveSizes(sizes []int, k int, b array.Builder) int {
	b.Reserve(sizes[k])
	k++
	if l, ok := b.(*array.ListBuilder); ok {
		k = reserveSizes(sizes, k, l.ValueBuilder())
	}
	return k
}

// close flushes the last batch and the footer; a writer that created its
// file closes and renames it. After a failure the partial file is removed.
func (w *batchWriter) close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	defer w.rb.Release()
	if w.err == nil {
		w.flush()
	}
	if w.err == nil {
		if err := w.fw.Close(); err != nil {
			w.fail(fmt.Errorf("%s: write footer: %w", w.name, err))
		}
	}
	if w.err == nil {
		if err := w.bw.Flush(); err != nil {
			w.fail(fmt.Errorf("%s: %w", w.name, err))
		}
	}
	if w.file == nil {
		return w.err
	}
	if err := w.file.Close(); err != nil {
		w.fail(fmt.Errorf("%s: %w", w.name, err))
	}
	if w.err != nil {
		os.Remove(w.file.Name())
		return w.err
	}
	if err := os.Rename(w.file.Name(), w.path); err != nil {
		return w.fail(fmt.Errorf("%s: %w", w.name, err))
	}
	return nil
}

// ReadAtSeeker is what a reader reads from: an *os.File or a
// *bytes.Reader.
type ReadAtSeeker = ipc.ReadAtSeeker

// batchReader is the core of every reader: it checks the file's metadata
// and schema once, then loads one record batch at a time, checking its
// structure and checksum before a typed reader decodes it.
type batchReader struct {
	name     string
	fr       *ipc.FileReader
	file     *os.File // set when the reader opened the file
	kind     Kind
	meta     map[string]string
	opt      ReaderOptions
	crc      crcHasher
	verify   bool     // the file carries per-batch checksums and they are checked
	metaKeys []string // the metadata in file order
	metaVals []string
	next     int // index of the next batch
	nbatches int
	rec      arrow.RecordBatch
	base     int64 // file row of rec's first row
	rows     int64 // rows read so far, rec included
	batches  int
}

// safely runs f, turning a panic (arrow-go decodes flatbuffers and
// buffers that a corrupted file can make inconsistent) into an error.
func safely(what string, f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: corrupt file (%v)", what, p)
		}
	}()
	return f()
}

// openPath opens a file for one of the typed readers.
func openPath(path string, want Kind, schema *arrow.Schema, opt ReaderOptions) (*batchReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open dataset: %w", err)
	}
	r, err := newBatchReader(filepath.Base(path), f, want, schema, opt)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.file = f
	return r, nil
}

// newBatchReader opens src as an Arrow IPC file of kind want (any when
// empty) with exactly the given schema fields (any when schema is nil).
func newBatchReader(name string, src ReadAtSeeker, want Kind, schema *arrow.Schema, opt ReaderOptions) (*batchReader, error) {
	if opt.Allocator == nil {
		opt.Allocator = memory.NewGoAllocator()
	}
	r := &batchReader{name: name, opt: opt, crc: newCRCHasher()}
	fail := func(format string, args ...any) error {
		return &DataError{File: name, Batch: -1, Row: -1, Err: fmt.Errorf(format, args...)}
	}
	err := safely("read footer", func() error {
		if err := checkFile(src); err != nil {
			return err
		}
		fr, err := ipc.NewFileReader(src, ipc.WithAllocator(opt.Allocator), ipc.WithBodySizeLimit(maxBodySize))
		if err != nil {
			return err
		}
		r.fr = fr
		md := fr.Schema().Metadata()
		r.meta = md.ToMap()
		r.metaKeys, r.metaVals = md.Keys(), md.Values()
		// The footer's flatbuffer is read lazily: a corrupt one panics
		// here, inside safely, rather than in a later call.
		r.nbatches = fr.NumRecords()
		for i := 0; i < fr.Schema().NumFields(); i++ {
			_ = fr.Schema().Field(i).Type.String()
		}
		return nil
	})
	if err != nil {
		return nil, fail("not a readable Arrow IPC file (truncated or corrupt?): %w", err)
	}
	if want == "" {
		// Generic use (inspect): any Arrow file; the tegrl keys are
		// reported, not required.
		r.kind = Kind(r.meta[MetaKind])
		r.verify = r.meta[MetaChecksum] == "crc32c" && !opt.SkipChecksum
		if r.verify {
			if err := r.checkMetadataCRC(); err != nil {
				return nil, fail("%w", err)
			}
		}
		return r, nil
	}
	kind, ok := r.meta[MetaKind]
	switch {
	case !ok:
		return nil, fail("no %s in the schema metadata: not a tegrl dataset", MetaKind)
	case Kind(kind) != want:
		return nil, fail("holds %q, want %q", kind, want)
	}
	r.kind = want
	if v := r.meta[MetaFormatVersion]; v != strconv.Itoa(FormatVersion) {
		return nil, fail("format version %q, this build reads version %d", v, FormatVersion)
	}
	hash, ok := r.meta[MetaSchemaHash]
	if !ok {
		return nil, fail("no %s in the schema metadata", MetaSchemaHash)
	}
	wantHash := opt.SchemaHash
	if wantHash == "" && want == KindTransitions {
		wantHash = env.ObservationSchemaHash()
	}
	if wantHash != "" && hash != wantHash {
		return nil, fail("%w: the file has %s, the reader expects %s (the observation layout changed since it was written: regenerate it)",
			ErrSchemaHash, hash, wantHash)
	}
	switch c := r.meta[MetaChecksum]; c {
	case "crc32c":
		r.verify = !opt.SkipChecksum
	case "none":
	default:
		return nil, fail("checksum scheme %q: want crc32c or none", c)
	}
	if r.verify {
		if err := r.checkMetadataCRC(); err != nil {
			return nil, fail("%w", err)
		}
	}
	for k := range r.meta {
		if strings.HasPrefix(k, "tegrl.") && !knownKey(want, k) {
			return nil, fail("unknown metadata key %q (corrupt, or written by a newer version)", k)
		}
	}
	if schema != nil {
		if err := sameFields(r.fr.Schema(), schema); err != nil {
			return nil, fail("%w", err)
		}
	}
	return r, nil
}

func (r *batchReader) checkMetadataCRC() error {
	want, ok := r.meta[MetaSchemaCRC]
	if !ok {
		return fmt.Errorf("no %s in the schema metadata", MetaSchemaCRC)
	}
	if got := crcHex(metadataCRC(r.metaKeys, r.metaVals)); got != want {
		return fmt.Errorf("schema metadata checksum %s, the file says %s: corrupt file", got, want)
	}
	return nil
}

// sameFields checks that got has exactly want's fields, names and types,
// in order.
func sameFields(got, want *arrow.Schema) error {
	if got.NumFields() != want.NumFields() {
		return fmt.Errorf("%d columns, want %d (%s)", got.NumFields(), want.NumFields(), fieldNames(want))
	}
	for i := 0; i < want.NumFields(); i++ {
		g, w := got.Field(i), want.Field(i)
		if g.Name != w.Name {
			return fmt.Errorf("column %d is %q, want %q", i, g.Name, w.Name)
		}
		if !arrow.TypeEqual(g.Type, w.Type) {
			return fmt.Errorf("column %s has type %s, want %s", g.Name, g.Type, w.Type)
		}
	}
	return nil
}

func fieldNames(s *arrow.Schema) string {
	names := make([]string, s.NumFields())
	for i := range names {
		names[i] = s.Field(i).Name
	}
	return strings.Join(names, ",")
}

// NumBatches is the number of record batches in the file.
func (r *batchReader) NumBatches() int { return r.nbatches }

// nextBatch releases the current batch and loads the next; it returns
// io.EOF after the last. The batch is checked for structure (column
// lengths, offsets, buffer sizes) and, when the file has checksums, its
// CRC.
func (r *batchReader) nextBatch() (arrow.RecordBatch, error) {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	if r.next >= r.nbatches {
		return nil, io.EOF
	}
	i := r.next
	r.next++
	var rec arrow.RecordBatch
	err := safely("read batch", func() error {
		var err error
		rec, err = r.fr.RecordBatchAt(i)
		if err != nil {
			return err
		}
		return checkRecord(rec)
	})
	if err == nil && r.verify {
		err = safely("checksum", func() error { return r.checkCRC(rec) })
	}
	if err != nil {
		if rec != nil {
			rec.Release()
		}
		return nil, &DataError{File: r.name, Batch: i, Row: -1, Err: err}
	}
	r.rec = rec
	r.base = r.rows
	r.rows += rec.NumRows()
	r.batches++
	return rec, nil
}

func (r *batchReader) checkCRC(rec arrow.RecordBatch) error {
	rm, ok := rec.(arrow.RecordBatchWithMetadata)
	var want string
	if ok {
		want, ok = rm.Metadata().GetValue(MetaBatchCRC)
	}
	if !ok {
		return fmt.Errorf("no %s in the batch metadata", MetaBatchCRC)
	}
	got := crcHex(r.crc.record(rec))
	if got != want {
		return fmt.Errorf("checksum %s, the batch says %s: corrupt file", got, want)
	}
	return nil
}

// rowErr builds the error of a bad value in row row of the current batch.
func (r *batchReader) rowErr(row int, col string, format string, args ...any) error {
	return &DataError{File: r.name, Batch: r.next - 1, Row: row, FileRow: r.base + int64(row), Column: col, Err: fmt.Errorf(format, args...)}
}

func (r *batchReader) close() error {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	var err error
	if r.fr != nil {
		err = r.fr.Close()
		r.fr = nil
	}
	if r.file != nil {
		if cerr := r.file.Close(); err == nil {
			err = cerr
		}
		r.file = nil
	}
	return err
}

// checkRecord checks what arrow-go leaves to its users: every column has
// the batch's length, and offsets and bitmaps lie within their buffers, so
// that decoding cannot index out of range.
func checkRecord(rec arrow.RecordBatch) error {
	if rec.NumRows() < 0 {
		return fmt.Errorf("negative row count %d", rec.NumRows())
	}
	for i, col := range rec.Columns() {
		if int64(col.Len()) != rec.NumRows() {
			return fmt.Errorf("column %s has %d rows, the batch %d", rec.ColumnName(i), col.Len(), rec.NumRows())
		}
		if err := checkArray(col); err != nil {
			return fmt.Errorf("column %s: %w", rec.ColumnName(i), err)
		}
	}
	return nil
}

func checkArray(a arrow.Array) error {
	d := a.Data()
	if d.Offset() < 0 || d.Len() < 0 {
		return fmt.Errorf("negative offset %d or length %d", d.Offset(), d.Len())
	}
	bits := d.Offset() + d.Len()
	bitmapOK := func(b *memory.Buffer) bool { return b == nil || b.Len()*8 >= bits }
	bufs := d.Buffers()
	if len(bufs) > 0 && bufs[0] != nil && bufs[0].Len() > 0 && !bitmapOK(bufs[0]) {
		return fmt.Errorf("validity bitmap of %d bytes for %d values", bufs[0].Len(), bits)
	}
	// A null count outside [0, length] (a negative one makes arrow-go
	// count the bitmap's bits), or nulls without a bitmap to mark them,
	// is corrupt.
	if n := d.NullN(); n < 0 || n > d.Len() {
		return fmt.Errorf("null count %d outside [0, %d]", n, d.Len())
	} else if n > 0 && (len(bufs) == 0 || bufs[0] == nil || !bitmapOK(bufs[0])) {
		return fmt.Errorf("%d nulls without a validity bitmap for %d values", n, bits)
	}
	switch a := a.(type) {
	case *array.Boolean:
		if d.Len() > 0 && (len(bufs) < 2 || bufs[1] == nil || !bitmapOK(bufs[1])) {
			return errors.New("boolean values buffer too short")
		}
	case *array.String:
		return a.ValidateFull()
	case *array.List:
		if err := a.ValidateFull(); err != nil {
			return err
		}
		return checkArray(a.ListValues())
	default:
		fw, ok := a.DataType().(arrow.FixedWidthDataType)
		if ok && d.Len() > 0 && (len(bufs) < 2 || bufs[1] == nil || bufs[1].Len()*8 < bits*fw.BitWidth()) {
			return fmt.Errorf("values buffer too short for %d values", d.Len())
		}
	}
	return nil
}

// decodeSafely runs a typed reader's decode. The checks before it make
// every index valid, so a panic here is a bug of this package; it still
// becomes an error naming the file and batch, not a crash, and the fuzz
// tests look for its message.
// advance reads the next batch and decodes it with decode; it reports
// false at the end of the file or on an error, which it keeps in *errp
// (and then stays false: the readers' Next).
func (r *batchReader) advance(errp *error, decode func(arrow.RecordBatch) error) bool {
	if *errp != nil {
		return false
	}
	rec, err := r.nextBatch()
	if err == nil {
		err = r.decodeSafely(func() error { return decode(rec) })
	}
	if err != nil {
		if err != io.EOF {
			*errp = err
		}
		return false
	}
	return true
}

func (r *batchReader) decodeSafely(decode func() error) error {
	err := safely(internalError, decode)
	var de *DataError
	if err != nil && !errors.As(err, &de) {
		err = &DataError{File: r.name, Batch: r.next - 1, Row: -1, Err: err}
	}
	return err
}

// internalError starts the message of a panic caught while decoding.
const internalError = "internal error decoding a checked batch"

// checkNulls refuses nulls in the columns (and list items) that the
// schema declares non-nullable.
func (r *batchReader) checkNulls(rec arrow.RecordBatch) error {
	s := rec.Schema()
	for i, col := range rec.Columns() {
		f := s.Field(i)
		if !f.Nullable && col.NullN() > 0 {
			return r.rowErr(firstNull(col), f.Name, "null in a non-nullable column")
		}
		if l, ok := col.(*array.List); ok {
			lt := f.Type.(*arrow.ListType)
			if v := l.ListValues(); !lt.ElemField().Nullable && v.NullN() > 0 {
				k := firstNull(v)
				row, _ := slices.BinarySearch(l.Offsets()[l.Data().Offset():l.Data().Offset()+l.Len()+1], int32(k)+1)
				return r.rowErr(max(row-1, 0), f.Name, "null item %d in a list of non-nullable items", k)
			}
		}
	}
	return nil
}

func firstNull(a arrow.Array) int {
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			return i
		}
	}
	return 0
}

// knownKeys lists the schema metadata keys of each kind beyond the common
// ones.
var knownKeys = map[Kind][]string{}

func knownKey(k Kind, key string) bool {
	switch key {
	case MetaKind, MetaFormatVersion, MetaSchemaHash, MetaChecksum, MetaSource, MetaSchemaCRC:
		return true
	}
	return slices.Contains(knownKeys[k], key)
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
