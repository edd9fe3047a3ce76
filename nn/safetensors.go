package nn

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"unsafe"
)

// Safetensors format (https://github.com/huggingface/safetensors): an
// 8-byte little-endian header length N, N bytes of JSON header, then the
// tensor bytes. The header maps each tensor name to
// {"dtype", "shape", "data_offsets": [begin, end]} with offsets relative to
// the start of the byte buffer, plus an optional "__metadata__" object of
// strings. Tensors are little-endian and row-major.

const (
	metadataKey = "__metadata__"
	// maxHeaderLen bounds the JSON header (the reference implementation uses
	// the same limit) so a corrupt length cannot make us allocate gigabytes.
	maxHeaderLen = 100 << 20
)

// SafetensorsTensor is one tensor of a decoded safetensors file.
type SafetensorsTensor struct {
	Name  string
	DType string // "F32" or "F64"
	Shape []int
	Data  []byte // little-endian elements; aliases the decoded input
}

// Safetensors is a decoded safetensors file.
type Safetensors struct {
	Tensors  []SafetensorsTensor // in the order of their data offsets
	Metadata map[string]string   // nil if the file has none
}

// Tensor returns the tensor with the given name.
func (f *Safetensors) Tensor(name string) (*SafetensorsTensor, bool) {
	for i := range f.Tensors {
		if f.Tensors[i].Name == name {
			return &f.Tensors[i], true
		}
	}
	return nil, false
}

func dtypeSize(dtype string) int {
	switch dtype {
	case "F32":
		return 4
	case "F64":
		return 8
	}
	return 0
}

// Float64s returns the elements converted to float64.
func (t *SafetensorsTensor) Float64s() []float64 {
	size := dtypeSize(t.DType)
	out := make([]float64, len(t.Data)/size)
	for i := range out {
		if size == 4 {
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:])))
		} else {
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(t.Data[8*i:]))
		}
	}
	return out
}

// CheckFinite returns an error naming the first tensor and element that is
// NaN or infinite.
func (f *Safetensors) CheckFinite() error {
	for i := range f.Tensors {
		t := &f.Tensors[i]
		for j, v := range t.Float64s() {
			if !isFinite(v) {
				return fmt.Errorf("safetensors: tensor %q element %d is %v", t.Name, j, v)
			}
		}
	}
	return nil
}

type stEntry struct {
	DType   *string  `json:"dtype"`
	Shape   *[]int   `json:"shape"`
	Offsets *[]int64 `json:"data_offsets"`
}

// DecodeSafetensors parses and validates a safetensors file held in b. It
// checks the header length, the JSON (an object, no duplicate or unknown
// keys, no trailing data), dtypes (F32 and F64 only), that each tensor's
// shape matches its byte range, and that the byte ranges are in bounds, do
// not overlap and cover the data buffer exactly. Errors say which tensor and
// what is wrong. Tensor data aliases b.
func DecodeSafetensors(b []byte) (*Safetensors, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("safetensors: file is %d bytes, shorter than the 8-byte header length", len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	if n > maxHeaderLen {
		return nil, fmt.Errorf("safetensors: header length %d exceeds the limit of %d bytes", n, maxHeaderLen)
	}
	if n > uint64(len(b)-8) {
		return nil, fmt.Errorf("safetensors: header length %d exceeds the %d bytes after the length field", n, len(b)-8)
	}
	hdr, buf := b[8:8+n], b[8+n:]
	f, offs, err := parseHeader(hdr)
	if err != nil {
		return nil, err
	}
	// Sort by offsets and require the ranges to tile the buffer.
	order := make([]int, len(f.Tensors))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int {
		if c := cmpInt(offs[i][0], offs[j][0]); c != 0 {
			return c
		}
		return cmpInt(offs[i][1], offs[j][1])
	})
	sorted := make([]SafetensorsTensor, len(order))
	pos, prev := 0, ""
	for k, i := range order {
		t := f.Tensors[i]
		begin, end := offs[i][0], offs[i][1]
		if end > len(buf) {
			return nil, fmt.Errorf("safetensors: tensor %q: data_offsets [%d, %d] beyond the %d-byte data buffer", t.Name, begin, end, len(buf))
		}
		switch {
		case begin < pos:
			return nil, fmt.Errorf("safetensors: tensor %q: data_offsets [%d, %d] overlap tensor %q ending at %d", t.Name, begin, end, prev, pos)
		case begin > pos:
			return nil, fmt.Errorf("safetensors: tensor %q: data_offsets [%d, %d] leave bytes [%d, %d) unused", t.Name, begin, end, pos, begin)
		}
		t.Data = buf[begin:end:end]
		sorted[k] = t
		pos, prev = end, t.Name
	}
	if pos != len(buf) {
		return nil, fmt.Errorf("safetensors: data buffer is %d bytes but tensors cover only %d", len(buf), pos)
	}
	f.Tensors = sorted
	return f, nil
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// parseHeader decodes the JSON header and checks each entry on its own. It
// returns the tensors in header order with their byte ranges.
func parseHeader(hdr []byte) (*Safetensors, [][2]int, error) {
	dec := json.NewDecoder(bytes.NewReader(hdr))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors: header is not JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, fmt.Errorf("safetensors: header is not a JSON object")
	}
	f := &Safetensors{}
	var offs [][2]int
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("safetensors: header: %w", err)
		}
		name := tok.(string) // object keys are always strings
		if seen[name] {
			return nil, nil, fmt.Errorf("safetensors: header: duplicate key %q", name)
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, fmt.Errorf("safetensors: header: value of %q: %w", name, err)
		}
		if name == metadataKey {
			if err := strictUnmarshal(raw, &f.Metadata); err != nil {
				return nil, nil, fmt.Errorf("safetensors: %s: %w", metadataKey, err)
			}
			if f.Metadata == nil {
				return nil, nil, fmt.Errorf("safetensors: %s is null, want an object of strings", metadataKey)
			}
			continue
		}
		t, off, err := parseEntry(name, raw)
		if err != nil {
			return nil, nil, err
		}
		f.Tensors = append(f.Tensors, t)
		offs = append(offs, off)
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, nil, fmt.Errorf("safetensors: header: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, fmt.Errorf("safetensors: header: data after the JSON object")
	}
	return f, offs, nil
}

func strictUnmarshal(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func parseEntry(name string, raw []byte) (SafetensorsTensor, [2]int, error) {
	var e stEntry
	var off [2]int
	if err := strictUnmarshal(raw, &e); err != nil {
		return SafetensorsTensor{}, off, fmt.Errorf("safetensors: tensor %q: %w", name, err)
	}
	switch {
	case e.DType == nil:
		return SafetensorsTensor{}, off, fmt.Errorf("safetensors: tensor %q: missing dtype", name)
	case e.Shape == nil:
		return SafetensorsTensor{}, off, fmt.Errorf("safetensors: tensor %q: missing shape", name)
	case e.Offsets == nil:
		return SafetensorsTensor{}, off, fmt.Errorf("safetensors: tensor %q: missing data_offsets", name)
	}
	size := dtypeSize(*e.DType)
	if size == 0 {
		return SafetensorsTensor{}, off, fmt.Errorf("safetensors: tensor %q: unsupported dtype %q (want F32 or F64)", name, *e.DType)
	}
	if len(*e.Offsets) != 2 {
		return SafetensorsTensor{}, off, fmt.Errorf("safetensors: tensor %q: data_offsets has %d values, want 2", name, len(*e.Offsets))
	}
	begin, end := (*e.Offsets)[0], (*e.Offsets)[1]
	if begin < 0 || end < begin || end > int64(maxInt) {
		return SafetensorsTensor{}, off, fmt.Errorf("safetensors: tensor %q: invalid data_offsets [%d, %d]", name, begin, end)
	}
	count := 1
	for _, d := range *e.Shape {
		if d < 0 {
			return SafetensorsTensor{}, off, fmt.Errorf("safetensors: tensor %q: negative dimension in shape %v", name, *e.Shape)
		}
		if d != 0 && count > (maxInt/size)/d {
			return SafetensorsTensor{}, off, fmt.Errorf("safetensors: tensor %q: shape %v is too large", name, *e.Shape)
		}
		count *= d
	}
	if int64(count*size) != end-begin {
		return SafetensorsTensor{}, off, fmt.Errorf("safetensors: tensor %q: shape %v of %s needs %d bytes, data_offsets [%d, %d] give %d",
			name, *e.Shape, *e.DType, count*size, begin, end, end-begin)
	}
	off = [2]int{int(begin), int(end)}
	return SafetensorsTensor{Name: name, DType: *e.DType, Shape: *e.Shape}, off, nil
}

const maxInt = int(^uint(0) >> 1)

// WriteSafetensors writes the parameters to w in registration order, with
// dtype F32 for float32 tensors and F64 for float64 ones, and meta (which
// may be nil) as the file's __metadata__. The header is padded with spaces
// to a multiple of 8 bytes so the data is aligned, as the reference
// implementation does. The output is deterministic.
func (p *Params[T]) WriteSafetensors(w io.Writer, meta map[string]string) error {
	var zero T
	size := int(unsafe.Sizeof(zero))
	dtype := "F64"
	if size == 4 {
		dtype = "F32"
	}
	type entry struct {
		DType   string `json:"dtype"`
		Shape   []int  `json:"shape"`
		Offsets [2]int `json:"data_offsets"`
	}
	h := make(map[string]any, len(p.list)+1)
	if len(meta) > 0 {
		h[metadataKey] = meta
	}
	pos := 0
	for i, t := range p.list {
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		h[p.names[i]] = entry{DType: dtype, Shape: shape, Offsets: [2]int{pos, pos + size*len(t.Data)}}
		pos += size * len(t.Data)
	}
	js, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("safetensors: encoding header: %w", err)
	}
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	out := make([]byte, 0, 8+len(js)+pos)
	out = binary.LittleEndian.AppendUint64(out, uint64(len(js)))
	out = append(out, js...)
	for _, t := range p.list {
		for _, v := range t.Data {
			if size == 4 {
				out = binary.LittleEndian.AppendUint32(out, math.Float32bits(float32(v)))
			} else {
				out = binary.LittleEndian.AppendUint64(out, math.Float64bits(float64(v)))
			}
		}
	}
	if _, err := w.Write(out); err != nil {
		return fmt.Errorf("safetensors: writing: %w", err)
	}
	return nil
}

// ReadSafetensors reads a safetensors file from r into the registered
// parameters and returns its metadata. The file must hold exactly the
// registered names with the registered shapes; F32 and F64 data are
// converted to the parameters' type. Non-finite values are rejected. On
// error the parameters are left unchanged.
func (p *Params[T]) ReadSafetensors(r io.Reader) (map[string]string, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("safetensors: reading: %w", err)
	}
	f, err := DecodeSafetensors(b)
	if err != nil {
		return nil, err
	}
	if err := f.CheckFinite(); err != nil {
		return nil, err
	}
	for i := range f.Tensors {
		st := &f.Tensors[i]
		t := p.Get(st.Name)
		if t == nil {
			return nil, fmt.Errorf("safetensors: tensor %q is not a registered parameter", st.Name)
		}
		if !slices.Equal(t.Shape, st.Shape) {
			return nil, fmt.Errorf("safetensors: tensor %q has shape %v, parameter has %v", st.Name, st.Shape, t.Shape)
		}
	}
	for _, name := range p.names {
		if _, ok := f.Tensor(name); !ok {
			return nil, fmt.Errorf("safetensors: parameter %q is missing from the file", name)
		}
	}
	for i := range f.Tensors {
		st := &f.Tensors[i]
		t := p.Get(st.Name)
		for j, v := range st.Float64s() {
			t.Data[j] = T(v)
		}
	}
	return f.Metadata, nil
}
