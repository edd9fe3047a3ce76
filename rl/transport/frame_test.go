package transport

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func testFrame() Frame {
	return Frame{Kind: KindSegment, RunID: "run-1", Version: 7, Actor: 3, Seq: 42, Payload: []byte("hello")}
}

func mustEncode(t testing.TB, f Frame) []byte {
	t.Helper()
	b, err := EncodeFrame(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFrameRoundTrip(t *testing.T) {
	for _, f := range []Frame{
		testFrame(),
		{Kind: KindParams, RunID: "r", Version: 1<<64 - 1, Payload: bytes.Repeat([]byte{0xab}, 70000)},
		{Kind: KindParamsPointer, RunID: strings.Repeat("a", MaxRunIDLen), Version: 9, Payload: AppendPointer(nil, ParamsPointer{Size: 3 << 20, Checksum: 0xdeadbeef})},
		{Kind: KindStats, RunID: "A_b-9", Actor: 1<<32 - 1, Seq: 1<<64 - 1, Payload: []byte(`{"steps":1}`)},
		{Kind: KindSegment, RunID: "empty"}, // empty payload
	} {
		b := mustEncode(t, f)
		if len(b) != HeaderSize+len(f.RunID)+len(f.Payload) {
			t.Errorf("%s: %d bytes, want %d", f.Kind, len(b), HeaderSize+len(f.RunID)+len(f.Payload))
		}
		g, err := DecodeFrame(b)
		if err != nil {
			t.Fatalf("%s: %v", f.Kind, err)
		}
		if g.Kind != f.Kind || g.RunID != f.RunID || g.Version != f.Version || g.Actor != f.Actor || g.Seq != f.Seq || !bytes.Equal(g.Payload, f.Payload) {
			t.Errorf("round trip: got %+v, want %+v", g, f)
		}
	}
}

// The wire format is pinned: a change here breaks every deployed actor.
func TestFrameGoldenBytes(t *testing.T) {
	b := mustEncode(t, testFrame())
	want := "5447524c" + "01" + "01" + "05" + "00" + // magic, format, kind, run len, reserved
		"0700000000000000" + "03000000" + "2a00000000000000" + // version, actor, seq
		"05000000" + hex.EncodeToString(binary.LittleEndian.AppendUint32(nil, Checksum([]byte("hello")))) +
		hex.EncodeToString([]byte("run-1")) + hex.EncodeToString([]byte("hello"))
	if got := hex.EncodeToString(b); got != want {
		t.Errorf("encoding:\n got %s\nwant %s", got, want)
	}
	// CRC-32C check value of "123456789" (RFC 3720).
	if c := Checksum([]byte("123456789")); c != 0xe3069283 {
		t.Errorf("Checksum is not CRC-32C: %08x", c)
	}
}

func TestFrameDeterministic(t *testing.T) {
	f := testFrame()
	a, b := mustEncode(t, f), mustEncode(t, f)
	if !bytes.Equal(a, b) {
		t.Fatal("same frame, different bytes")
	}
	c, err := AppendFrame(make([]byte, 3, 100), f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c[3:], a) {
		t.Fatal("AppendFrame differs from EncodeFrame")
	}
}

func TestAppendFrameNoAlloc(t *testing.T) {
	f := testFrame()
	f.Payload = make([]byte, 65536)
	buf := make([]byte, 0, 70000)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		buf, err = AppendFrame(buf[:0], f)
		if err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("AppendFrame: %v allocs, want 0", allocs)
	}
	b := mustEncode(t, f)
	allocs = testing.AllocsPerRun(100, func() {
		if _, _, err := decodeFrame(b); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("decodeFrame: %v allocs, want 0", allocs)
	}
}

func TestDecodeFrameErrors(t *testing.T) {
	good := mustEncode(t, testFrame())
	edit := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"magic only", []byte("TGRL"), ErrTruncated},
		{"short", good[:HeaderSize-1], ErrTruncated},
		{"bad magic", edit(func(b []byte) []byte { b[0] = 'X'; return b }), ErrBadMagic},
		{"short bad magic", []byte("NOPE"), ErrBadMagic},
		{"format version", edit(func(b []byte) []byte { b[4] = 2; return b }), ErrBadFormatVersion},
		{"kind 0", edit(func(b []byte) []byte { b[5] = 0; return b }), ErrUnknownKind},
		{"kind 6", edit(func(b []byte) []byte { b[5] = 6; return b }), ErrUnknownKind},
		{"reserved", edit(func(b []byte) []byte { b[7] = 1; return b }), ErrBadHeader},
		{"oversized", edit(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[28:], MaxFramePayload+1); return b }), ErrOversized},
		{"length short", good[:len(good)-1], ErrLengthMismatch},
		{"length long", append(append([]byte(nil), good...), 0), ErrLengthMismatch},
		{"run id empty", edit(func(b []byte) []byte { b[6] = 0; binary.LittleEndian.PutUint32(b[28:], 10); return b }), ErrBadRunID},
		{"run id char", edit(func(b []byte) []byte { b[HeaderSize+3] = '.'; return b }), ErrBadRunID},
		{"checksum", edit(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), ErrBadChecksum},
		{"checksum field", edit(func(b []byte) []byte { b[32] ^= 0x80; return b }), ErrBadChecksum},
	}
	for _, c := range cases {
		_, err := DecodeFrame(c.b)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
			continue
		}
		if !strings.HasPrefix(err.Error(), "transport: decode") {
			t.Errorf("%s: error lacks context: %v", c.name, err)
		}
	}
}

func TestEncodeFrameErrors(t *testing.T) {
	f := testFrame()
	f.Kind = 9
	if _, err := EncodeFrame(f); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("kind 9: %v", err)
	}
	f = testFrame()
	f.RunID = "a.b"
	if _, err := EncodeFrame(f); !errors.Is(err, ErrBadRunID) {
		t.Errorf("run a.b: %v", err)
	}
	f = testFrame()
	f.Payload = make([]byte, MaxFramePayload+1)
	if _, err := EncodeFrame(f); !errors.Is(err, ErrOversized) {
		t.Errorf("oversized: %v", err)
	}
}

func TestValidateRunID(t *testing.T) {
	for _, ok := range []string{"a", "run-1", "A_b-9", strings.Repeat("z", 64)} {
		if err := ValidateRunID(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a.b", "a b", "a*", "a>", "é", strings.Repeat("z", 65)} {
		if err := ValidateRunID(bad); !errors.Is(err, ErrBadRunID) {
			t.Errorf("%q: err = %v, want ErrBadRunID", bad, err)
		}
	}
	s := SubjectsFor("r1")
	if s.Traj != "tegrl.r1.traj" || s.Params != "tegrl.r1.params" || s.Stats != "tegrl.r1.stats" {
		t.Errorf("subjects %+v", s)
	}
	if ParamsBucket("r1") != "tegrl-r1-params" || ObjectName(12) != "v12" {
		t.Errorf("bucket %q object %q", ParamsBucket("r1"), ObjectName(12))
	}
}

func TestPointer(t *testing.T) {
	p := ParamsPointer{Size: 3 << 20, Checksum: 0x01020304}
	b := AppendPointer(nil, p)
	if hex.EncodeToString(b) != "0000300000000000"+"04030201" {
		t.Errorf("pointer bytes %x", b)
	}
	q, err := DecodePointer(b)
	if err != nil || q != p {
		t.Errorf("round trip %+v %v", q, err)
	}
	for _, bad := range [][]byte{nil, b[:11], append(b, 0), AppendPointer(nil, ParamsPointer{Size: MaxParamsSize + 1})} {
		if _, err := DecodePointer(bad); !errors.Is(err, ErrBadPointer) {
			t.Errorf("%x: %v", bad, err)
		}
	}
}

func FuzzDecodeFrame(f *testing.F) {
	for _, fr := range []Frame{
		testFrame(),
		{Kind: KindParamsPointer, RunID: "r", Version: 3, Payload: AppendPointer(nil, ParamsPointer{Size: 10, Checksum: 1})},
		{Kind: KindStats, RunID: "x", Payload: []byte("{}")},
	} {
		f.Add(mustEncode(f, fr))
	}
	f.Add([]byte("TGRL"))
	f.Add([]byte{})
	f.Add([]byte("garbage that is long enough to be a header, surely"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := DecodeFrame(b)
		if err != nil {
			return
		}
		// A frame that decodes re-encodes to the same bytes: the format has
		// one encoding per frame.
		again, err := EncodeFrame(fr)
		if err != nil {
			t.Fatalf("decoded frame does not encode: %v", err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n%x\n%x", again, b)
		}
		if fr.Kind == KindParamsPointer {
			if p, err := DecodePointer(fr.Payload); err == nil && !bytes.Equal(AppendPointer(nil, p), fr.Payload) {
				t.Fatalf("pointer re-encoding differs")
			}
		}
	})
}

func FuzzDecodePointer(f *testing.F) {
	f.Add(AppendPointer(nil, ParamsPointer{Size: 1 << 20, Checksum: 7}))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodePointer(b)
		if err != nil {
			return
		}
		if !bytes.Equal(AppendPointer(nil, p), b) || p.Size > MaxParamsSize {
			t.Fatalf("pointer %x decodes to %+v", b, p)
		}
	})
}
