package datasets

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// The batch checksum is a CRC-32C of a batch's logical content, not of
// its bytes on disk: Arrow IPC has no checksum of its own, and padding,
// buffer slicing and alignment may differ between writers that store the
// same values. For each column in order, the content is:
//
//   - the row count (uint64, little endian);
//   - when the column has nulls, one byte per row: 1 valid, 0 null;
//   - the values: fixed-width types their little-endian bytes; booleans
//     one byte per value (0 or 1); strings a uint32 byte length then the
//     bytes, per value; lists their offsets relative to the first (uint32
//     each, rows+1 of them), then the child's content over the rows' range
//     (count, nulls and values as above).
//
// docs/datasets.md repeats this for writers in other languages.
type crcHasher struct {
	h       hash.Hash32
	scratch []byte
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func newCRCHasher() crcHasher { return crcHasher{h: crc32.New(castagnoli)} }

// record returns the CRC-32C of rec's content.
func (c *crcHasher) record(rec arrow.RecordBatch) uint32 {
	c.h.Reset()
	for _, col := range rec.Columns() {
		c.array(col, 0, col.Len())
	}
	return c.h.Sum32()
}

// flushAt writes the scratch buffer to the hash once it holds n bytes, so
// that the per-value loops call the hash rarely.
func (c *crcHasher) flushAt(n int) {
	if len(c.scratch) >= n {
		c.h.Write(c.scratch)
		c.scratch = c.scratch[:0]
	}
}

// array hashes rows [lo, hi) of a.
func (c *crcHasher) array(a arrow.Array, lo, hi int) {
	const chunk = 1 << 16
	c.scratch = binary.LittleEndian.AppendUint64(c.scratch[:0], uint64(hi-lo))
	if a.NullN() > 0 {
		for i := lo; i < hi; i++ {
			v := byte(0)
			if a.IsValid(i) {
				v = 1
			}
			c.scratch = append(c.scratch, v)
			c.flushAt(chunk)
		}
	}
	switch a := a.(type) {
	case *array.Boolean:
		for i := lo; i < hi; i++ {
			v := byte(0)
			if a.Value(i) {
				v = 1
			}
			c.scratch = append(c.scratch, v)
			c.flushAt(chunk)
		}
		c.flushAt(0)
	case *array.String:
		for i := lo; i < hi; i++ {
			s := a.Value(i)
			c.scratch = binary.LittleEndian.AppendUint32(c.scratch, uint32(len(s)))
			c.scratch = append(c.scratch, s...)
			c.flushAt(chunk)
		}
		c.flushAt(0)
	case *array.List:
		off := a.Offsets()[a.Data().Offset():]
		base := off[lo]
		for i := lo; i <= hi; i++ {
			c.scratch = binary.LittleEndian.AppendUint32(c.scratch, uint32(off[i]-base))
			c.flushAt(chunk)
		}
		c.flushAt(0)
		c.array(a.ListValues(), int(base), int(off[hi]))
	default:
		c.flushAt(0)
		fw, ok := a.DataType().(arrow.FixedWidthDataType)
		if !ok || fw.BitWidth()%8 != 0 {
			// The schemas of this package use no other types; a generic
			// file (inspect) with one is hashed by row count only.
			return
		}
		w := fw.BitWidth() / 8
		d := a.Data()
		if hi == lo || d.Buffers()[1] == nil {
			return // no values (an empty array may have no buffer)
		}
		buf := d.Buffers()[1].Bytes()
		c.h.Write(buf[(d.Offset()+lo)*w : (d.Offset()+hi)*w])
	}
}

// crcHex formats a checksum as stored under MetaBatchCRC.
func crcHex(v uint32) string { return fmt.Sprintf("%08x", v) }
