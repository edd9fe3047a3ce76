package datasets

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// arrow-go decodes a file's flatbuffers (the footer, the schema in it, and
// each record batch's message) without bounds checks and allocates slices
// as long as the vector lengths they declare: one flipped byte in a length
// makes it allocate gigabytes and crash the process, which recover cannot
// catch, and a cyclic child offset recurses without end. So before arrow-go
// sees a footer or a batch message, this file walks it the way arrow-go
// will and checks every offset, vector and string against the buffer, and
// the nesting depth. It knows the Arrow format's tables (File.fbs,
// Schema.fbs, Message.fbs) only as far as arrow-go reads them eagerly.

// fb is a flatbuffer being checked.
type fb struct {
	buf   []byte
	nodes int // tables visited, bounded so that a cyclic buffer ends
}

var errFlatbuffer = errors.New("corrupt flatbuffer")

const (
	fbMaxDepth = 64      // arrow-go's own bound on type nesting
	fbMaxNodes = 1 << 16 // tables; a schema of 10,000 columns needs about 20,000
)

func (f *fb) u32(p int) (int, error) {
	if p < 0 || p+4 > len(f.buf) {
		return 0, fmt.Errorf("%w: offset %d outside %d bytes", errFlatbuffer, p, len(f.buf))
	}
	return int(binary.LittleEndian.Uint32(f.buf[p:])), nil
}

// fbTable is a checked table: its position and its vtable's.
type fbTable struct {
	f      *fb
	pos    int
	vt     int
	vsize  int
	tsize  int
	loaded bool
}

// table checks the table at pos.
func (f *fb) table(pos int) (fbTable, error) {
	f.nodes++
	if f.nodes > fbMaxNodes {
		return fbTable{}, fmt.Errorf("%w: too many tables", errFlatbuffer)
	}
	so, err := f.u32(pos)
	if err != nil {
		return fbTable{}, err
	}
	vt := pos - int(int32(uint32(so)))
	if vt < 0 || vt+4 > len(f.buf) {
		return fbTable{}, fmt.Errorf("%w: vtable at %d outside %d bytes", errFlatbuffer, vt, len(f.buf))
	}
	vsize := int(binary.LittleEndian.Uint16(f.buf[vt:]))
	tsize := int(binary.LittleEndian.Uint16(f.buf[vt+2:]))
	if vsize < 4 || vt+vsize > len(f.buf) || pos+tsize > len(f.buf) {
		return fbTable{}, fmt.Errorf("%w: table at %d (vtable %d bytes, table %d bytes) outside %d bytes", errFlatbuffer, pos, vsize, tsize, len(f.buf))
	}
	return fbTable{f: f, pos: pos, vt: vt, vsize: vsize, tsize: tsize, loaded: true}, nil
}

// root checks the root table.
func (f *fb) root() (fbTable, error) {
	p, err := f.u32(0)
	if err != nil {
		return fbTable{}, err
	}
	return f.table(p)
}

// field returns the position of field i's value, or ok false when absent.
func (t fbTable) field(i int) (int, bool, error) {
	o := 4 + 2*i
	if o+2 > t.vsize {
		return 0, false, nil
	}
	voff := int(binary.LittleEndian.Uint16(t.f.buf[t.vt+o:]))
	if voff == 0 {
		return 0, false, nil
	}
	if voff >= t.tsize {
		return 0, false, fmt.Errorf("%w: field %d at %d outside its %d-byte table", errFlatbuffer, i, voff, t.tsize)
	}
	return t.pos + voff, true, nil
}

// ref follows field i, an offset to a table, vector or string.
func (t fbTable) ref(i int) (int, bool, error) {
	p, ok, err := t.field(i)
	if !ok || err != nil {
		return 0, ok, err
	}
	o, err := t.f.u32(p)
	if err != nil {
		return 0, false, err
	}
	return p + o, true, nil
}

// vector checks field i, a vector of elem-byte elements, and returns its
// length and the position of its first element.
func (t fbTable) vector(i, elem int) (n, start int, err error) {
	v, ok, err := t.ref(i)
	if !ok || err != nil {
		return 0, 0, err
	}
	n, err = t.f.u32(v)
	if err != nil {
		return 0, 0, err
	}
	if n > (len(t.f.buf)-v-4)/elem {
		return 0, 0, fmt.Errorf("%w: vector of %d elements of %d bytes at %d outside %d bytes", errFlatbuffer, n, elem, v, len(t.f.buf))
	}
	return n, v + 4, nil
}

// tables checks field i, a vector of tables, calling check on each.
func (t fbTable) tables(i int, check func(fbTable) error) error {
	n, start, err := t.vector(i, 4)
	if err != nil {
		return err
	}
	for k := 0; k < n; k++ {
		p := start + 4*k
		o, err := t.f.u32(p)
		if err != nil {
			return err
		}
		tb, err := t.f.table(p + o)
		if err != nil {
			return err
		}
		if check != nil {
			if err := check(tb); err != nil {
				return err
			}
		}
	}
	return nil
}

// subtable checks field i, a table, when present.
func (t fbTable) subtable(i int) (fbTable, error) {
	p, ok, err := t.ref(i)
	if !ok || err != nil {
		return fbTable{}, err
	}
	return t.f.table(p)
}

func checkKeyValue(kv fbTable) error {
	for i := 0; i < 2; i++ { // key, value: strings
		if _, _, err := kv.vector(i, 1); err != nil {
			return err
		}
	}
	return nil
}

// checkField checks a Schema.fbs Field: name, type, dictionary, children,
// custom_metadata.
func checkField(fl fbTable, depth int) error {
	if depth > fbMaxDepth {
		return fmt.Errorf("%w: fields nested deeper than %d", errFlatbuffer, fbMaxDepth)
	}
	if _, _, err := fl.vector(0, 1); err != nil { // name
		return err
	}
	typ, err := fl.subtable(3)
	if err != nil {
		return err
	}
	const typeUnion = 14 // Schema.fbs Type enum
	if p, ok, err := fl.field(2); err != nil {
		return err
	} else if ok && typ.loaded && p < len(fl.f.buf) && fl.f.buf[p] == typeUnion {
		// A union's typeIds is the only vector in a type table.
		if _, _, err := typ.vector(1, 4); err != nil {
			return err
		}
	}
	if _, err := fl.subtable(4); err != nil { // dictionary encoding
		return err
	}
	if err := fl.tables(5, func(c fbTable) error { return checkField(c, depth+1) }); err != nil {
		return err
	}
	return fl.tables(6, checkKeyValue)
}

// checkFooter checks a File.fbs Footer: schema, dictionaries and record
// batches (vectors of 24-byte Blocks), custom_metadata. It returns the
// record batch blocks.
func checkFooter(buf []byte) ([]fileBlock, error) {
	f := &fb{buf: buf}
	root, err := f.root()
	if err != nil {
		return nil, err
	}
	schema, err := root.subtable(1)
	if err != nil {
		return nil, err
	}
	if !schema.loaded {
		return nil, fmt.Errorf("%w: footer without a schema", errFlatbuffer)
	}
	if err := schema.tables(1, func(fl fbTable) error { return checkField(fl, 0) }); err != nil {
		return nil, err
	}
	if err := schema.tables(2, checkKeyValue); err != nil {
		return nil, err
	}
	if _, _, err := schema.vector(3, 8); err != nil { // features
		return nil, err
	}
	if _, _, err := root.vector(2, 24); err != nil { // dictionaries
		return nil, err
	}
	n, start, err := root.vector(3, 24)
	if err != nil {
		return nil, err
	}
	if err := root.tables(4, checkKeyValue); err != nil {
		return nil, err
	}
	blocks := make([]fileBlock, n)
	for i := range blocks {
		p := buf[start+24*i:]
		blocks[i] = fileBlock{offset: int64(binary.LittleEndian.Uint64(p)), meta: int64(int32(binary.LittleEndian.Uint32(p[8:])))}
	}
	return blocks, nil
}

// checkMessage checks a Message.fbs Message holding a RecordBatch: its
// header's nodes and buffers (16-byte structs), compression, variadic
// counts, and the message's custom_metadata.
func checkMessage(buf []byte) error {
	f := &fb{buf: buf}
	root, err := f.root()
	if err != nil {
		return err
	}
	hdr, err := root.subtable(2)
	if err != nil {
		return err
	}
	if hdr.loaded {
		for _, v := range [][2]int{{1, 16}, {2, 16}, {4, 8}} {
			if _, _, err := hdr.vector(v[0], v[1]); err != nil {
				return err
			}
		}
		if _, err := hdr.subtable(3); err != nil {
			return err
		}
	}
	return root.tables(4, checkKeyValue)
}

// fileBlock is a record batch's place in the file, from the footer.
type fileBlock struct {
	offset, meta int64
}

var arrowMagic = []byte("ARROW1")

// checkFile checks the footer of the Arrow file src and every record
// batch's message, before arrow-go decodes them.
func checkFile(src ReadAtSeeker) error {
	size, err := src.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	if size < 6+4+8 {
		return fmt.Errorf("%d bytes: too short for an Arrow file", size)
	}
	tail := make([]byte, 10)
	if _, err := src.ReadAt(tail, size-10); err != nil {
		return err
	}
	if !bytes.Equal(tail[4:], arrowMagic) {
		return errors.New("no Arrow file magic at the end (truncated?)")
	}
	n := int64(binary.LittleEndian.Uint32(tail))
	if n <= 0 || n > size-10-8 {
		return fmt.Errorf("footer of %d bytes in a %d-byte file", n, size)
	}
	footer := make([]byte, n)
	if _, err := src.ReadAt(footer, size-10-n); err != nil {
		return err
	}
	blocks, err := checkFooter(footer)
	if err != nil {
		return fmt.Errorf("footer: %w", err)
	}
	for i, b := range blocks {
		if b.offset < 0 || b.meta < 8 || b.meta > size || b.offset > size-b.meta {
			return fmt.Errorf("batch %d: block at %d with %d bytes of metadata outside the %d-byte file", i, b.offset, b.meta, size)
		}
		meta := make([]byte, b.meta)
		if _, err := src.ReadAt(meta, b.offset); err != nil {
			return fmt.Errorf("batch %d: %w", i, err)
		}
		// An IPC message: 0xFFFFFFFF continuation (absent in old files),
		// its flatbuffer's length, the flatbuffer.
		if binary.LittleEndian.Uint32(meta) == 0xFFFFFFFF {
			meta = meta[4:]
		}
		if len(meta) < 4 {
			return fmt.Errorf("batch %d: message metadata too short", i)
		}
		m := int(int32(binary.LittleEndian.Uint32(meta)))
		if m < 0 || m > len(meta)-4 {
			return fmt.Errorf("batch %d: message of %d bytes in %d bytes of metadata", i, m, len(meta)-4)
		}
		if err := checkMessage(meta[4 : 4+m]); err != nil {
			return fmt.Errorf("batch %d message: %w", i, err)
		}
	}
	return nil
}
