package nn

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"
)

// stFile builds a safetensors file by hand from the format's definition:
// little-endian u64 header length, the header bytes, the data bytes.
func stFile(header string, data []byte) []byte {
	b := make([]byte, 8, 8+len(header)+len(data))
	binary.LittleEndian.PutUint64(b, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

// goldenHeader and goldenData describe two tensors: "a" F32 [2] = {1, -2}
// and "b" F64 [1,1] = {0.5}, written out byte by byte.
const goldenHeader = `{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F64","shape":[1,1],"data_offsets":[8,16]}}`

var goldenData = []byte{
	0x00, 0x00, 0x80, 0x3f, // float32 1.0
	0x00, 0x00, 0x00, 0xc0, // float32 -2.0
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe0, 0x3f, // float64 0.5
}

func TestSafetensorsGoldenRead(t *testing.T) {
	f, err := DecodeSafetensors(stFile(goldenHeader, goldenData))
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata["format"] != "pt" || len(f.Metadata) != 1 {
		t.Errorf("metadata = %v", f.Metadata)
	}
	if len(f.Tensors) != 2 {
		t.Fatalf("%d tensors", len(f.Tensors))
	}
	a, _ := f.Tensor("a")
	if a.DType != "F32" || !slices.Equal(a.Shape, []int{2}) || !equalF(a.Float64s(), []float64{1, -2}) {
		t.Errorf("a = %+v %v", a, a.Float64s())
	}
	b, _ := f.Tensor("b")
	if b.DType != "F64" || !slices.Equal(b.Shape, []int{1, 1}) || !equalF(b.Float64s(), []float64{0.5}) {
		t.Errorf("b = %+v %v", b, b.Float64s())
	}
}

func equalF(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSafetensorsWriterGolden(t *testing.T) {
	ps := NewParams[float32]()
	copy(ps.New("w", 2, 1).Data, []float32{1, -2})
	ps.New("b", 0) // empty tensor
	copy(ps.New("c", 1).Data, []float32{0.25})
	var buf bytes.Buffer
	if err := ps.WriteSafetensors(&buf, map[string]string{"config": `{"hidden":16}`}); err != nil {
		t.Fatal(err)
	}
	// Keys sorted as encoding/json writes maps; data in registration order;
	// header padded with spaces to a multiple of 8 bytes.
	hdr := `{"__metadata__":{"config":"{\"hidden\":16}"},` +
		`"b":{"dtype":"F32","shape":[0],"data_offsets":[8,8]},` +
		`"c":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},` +
		`"w":{"dtype":"F32","shape":[2,1],"data_offsets":[0,8]}}`
	hdr += strings.Repeat(" ", (8-len(hdr)%8)%8)
	want := stFile(hdr, []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0, 0, 0, 0x80, 0x3e})
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("writer output\n%q\nwant\n%q", buf.Bytes(), want)
	}
	// Round trip into float64 parameters converts the dtype.
	ps2 := NewParams[float64]()
	ps2.New("w", 2, 1)
	ps2.New("b", 0)
	ps2.New("c", 1)
	meta, err := ps2.ReadSafetensors(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if meta["config"] != `{"hidden":16}` || !equalF(ps2.Get("w").Data, []float64{1, -2}) || ps2.Get("c").Data[0] != 0.25 {
		t.Errorf("round trip: meta %v w %v c %v", meta, ps2.Get("w").Data, ps2.Get("c").Data)
	}
}

func TestSafetensorsErrors(t *testing.T) {
	f32 := func(vs ...float32) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		return b
	}
	tooLong := make([]byte, 8)
	binary.LittleEndian.PutUint64(tooLong, 1<<40)
	cases := []struct {
		name string
		file []byte
		want string
	}{
		{"short", []byte{1, 2, 3}, "shorter than the 8-byte"},
		{"header too long", tooLong, "exceeds the limit"},
		{"header past end", stFile("{}", nil)[:9], "exceeds the 1 bytes"},
		{"not json", stFile("{nope", nil), "header"},
		{"not object", stFile("[1]", nil), "not a JSON object"},
		{"trailing", stFile("{} {}", nil), "data after"},
		{"dup", stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, f32(1)), `duplicate key "a"`},
		{"dtype", stFile(`{"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}`, make([]byte, 8)), `tensor "a": unsupported dtype "I64"`},
		{"missing dtype", stFile(`{"a":{"shape":[1],"data_offsets":[0,4]}}`, f32(1)), `tensor "a": missing dtype`},
		{"unknown field", stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}}`, f32(1)), `tensor "a": json: unknown field`},
		{"negative dim", stFile(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, f32(1)), "negative dimension"},
		{"shape vs offsets", stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, f32(1)), `tensor "a": shape [2] of F32 needs 8 bytes`},
		{"huge shape", stFile(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}}`, f32(1)), "too large"},
		{"out of range", stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, f32(1)), "beyond the 4-byte data buffer"},
		{"reversed", stFile(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}}`, f32(1)), "invalid data_offsets"},
		{"overlap", stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, f32(1, 2)), `tensor "b": data_offsets [4, 8] overlap tensor "a"`},
		{"gap", stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, f32(1, 2)), "leave bytes [0, 4) unused"},
		{"uncovered", stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, f32(1, 2)), "cover only 4"},
		{"metadata type", stFile(`{"__metadata__":{"k":1}}`, nil), "__metadata__"},
		{"offsets count", stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}}`, f32(1)), "has 1 values"},
	}
	for _, c := range cases {
		_, err := DecodeSafetensors(c.file)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
	// Params-level checks: NaN, names and shapes.
	ps := NewParams[float32]()
	ps.New("a", 1)
	for _, c := range []struct {
		file []byte
		want string
	}{
		{stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, f32(float32(math.NaN()))), `tensor "a" element 0 is NaN`},
		{stFile(`{"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, f32(1)), `"b" is not a registered parameter`},
		{stFile(`{"a":{"dtype":"F32","shape":[1,1],"data_offsets":[0,4]}}`, f32(1)), `has shape [1 1], parameter has [1]`},
		{stFile(`{}`, nil), `parameter "a" is missing`},
	} {
		_, err := ps.ReadSafetensors(bytes.NewReader(c.file))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadSafetensors: error %v, want it to contain %q", err, c.want)
		}
	}
}

func FuzzLoadSafetensors(f *testing.F) {
	f.Add(stFile(goldenHeader, goldenData))
	f.Add(stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, []byte{0, 0, 0, 0}))
	f.Add(stFile(`{}`, nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := DecodeSafetensors(b)
		if err != nil {
			return
		}
		// A file that decodes is consistent: each tensor's bytes match its
		// shape and dtype, and the ranges tile the data buffer.
		total := 0
		for _, ts := range st.Tensors {
			if got, want := len(ts.Data), shapeSize(ts.Shape)*dtypeSize(ts.DType); got != want {
				t.Fatalf("tensor %q: %d bytes for shape %v %s", ts.Name, got, ts.Shape, ts.DType)
			}
			total += len(ts.Data)
			_ = st.CheckFinite()
		}
		if n := binary.LittleEndian.Uint64(b); total != len(b)-8-int(n) {
			t.Fatalf("tensors cover %d of %d data bytes", total, len(b)-8-int(n))
		}
	})
}
