package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
)

// Kind says what a frame carries.
type Kind uint8

// Frame kinds. The values are part of the wire format: never renumber.
const (
	// KindSegment is a trajectory segment, actor -> learner.
	KindSegment Kind = 1
	// KindParams is a full parameter set, learner -> actors.
	KindParams Kind = 2
	// KindParamsPointer says that the parameters of the frame's version lie
	// in the run's JetStream object store (they were too large for one
	// message); its payload is a ParamsPointer.
	KindParamsPointer Kind = 3
	// KindStats is an actor's statistics (JSON), actor -> learner.
	KindStats Kind = 4
	// KindEnd says that the learner has stopped, learner -> actors: its
	// version is the last one published, its payload an envelope (signed
	// with the learner's key, see SignEnd) around an empty body.
	KindEnd Kind = 5
)

// String names the kind ("segment", "params", "params-pointer", "stats", "end").
func (k Kind) String() string {
	switch k {
	case KindSegment:
		return "segment"
	case KindParams:
		return "params"
	case KindParamsPointer:
		return "params-pointer"
	case KindStats:
		return "stats"
	case KindEnd:
		return "end"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

func (k Kind) valid() bool { return k >= KindSegment && k <= KindEnd }

// Wire format of a frame (all integers little-endian):
//
//	offset size field
//	     0    4 magic "TGRL"
//	     4    1 format version (FormatVersion)
//	     5    1 kind
//	     6    1 run id length n (1..MaxRunIDLen)
//	     7    1 reserved, must be 0
//	     8    8 policy version
//	    16    4 actor id
//	    20    8 per-actor sequence number
//	    28    4 payload length m
//	    32    4 CRC-32C (Castagnoli) of the payload
//	    36    n run id (ASCII, [A-Za-z0-9_-])
//	  36+n    m payload
const (
	// Magic opens every frame.
	Magic = "TGRL"
	// FormatVersion is the version of the frame layout written by
	// EncodeFrame; DecodeFrame accepts only this one.
	FormatVersion = 1
	// HeaderSize is the size of the fixed part of the header; the run id
	// follows it.
	HeaderSize = 36
	// MaxFramePayload is the largest payload a frame may carry: NATS's own
	// hard limit on a message (64 MiB). Larger parameter sets travel through
	// the object store.
	MaxFramePayload = 64 << 20
)

// Errors of EncodeFrame and DecodeFrame. They are returned wrapped with
// context; test with errors.Is.
var (
	ErrTruncated        = errors.New("frame truncated")
	ErrBadMagic         = errors.New("bad magic")
	ErrBadFormatVersion = errors.New("unsupported frame format version")
	ErrUnknownKind      = errors.New("unknown frame kind")
	ErrBadHeader        = errors.New("bad frame header")
	ErrBadRunID         = errors.New("bad run id")
	ErrOversized        = errors.New("payload too large")
	ErrLengthMismatch   = errors.New("payload length mismatch")
	ErrBadChecksum      = errors.New("payload checksum mismatch")
	ErrBadPointer       = errors.New("bad params pointer")
)

// castagnoli is the CRC-32C table (hardware-accelerated on amd64 and arm64).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the CRC-32C (Castagnoli) of b, the checksum frames carry.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// Frame is one message of the transport: a header and an opaque payload.
type Frame struct {
	Kind    Kind
	RunID   string
	Version uint64 // policy version the payload was produced with (or is)
	Actor   uint32 // actor id (0 for the learner's frames)
	Seq     uint64 // per-actor sequence number, from 1; 0 where unused
	// Payload is the opaque body. A decoded frame's payload aliases the
	// decoded buffer.
	Payload []byte
}

// EncodeFrame returns the wire bytes of f. The same frame always encodes to
// the same bytes.
func EncodeFrame(f Frame) ([]byte, error) {
	return AppendFrame(make([]byte, 0, HeaderSize+len(f.RunID)+len(f.Payload)), f)
}

// AppendFrame appends the wire bytes of f to dst and returns the extended
// slice; with a dst of enough capacity it does not allocate.
func AppendFrame(dst []byte, f Frame) ([]byte, error) {
	if !f.Kind.valid() {
		return dst, fmt.Errorf("transport: encode frame: %w: %d", ErrUnknownKind, f.Kind)
	}
	if err := ValidateRunID(f.RunID); err != nil {
		return dst, fmt.Errorf("transport: encode %s frame: %w", f.Kind, err)
	}
	if len(f.Payload) > MaxFramePayload {
		return dst, fmt.Errorf("transport: encode %s frame: %w: %d bytes, limit %d", f.Kind, ErrOversized, len(f.Payload), MaxFramePayload)
	}
	var h [HeaderSize]byte
	copy(h[0:4], Magic)
	h[4] = FormatVersion
	h[5] = byte(f.Kind)
	h[6] = byte(len(f.RunID))
	binary.LittleEndian.PutUint64(h[8:], f.Version)
	binary.LittleEndian.PutUint32(h[16:], f.Actor)
	binary.LittleEndian.PutUint64(h[20:], f.Seq)
	binary.LittleEndian.PutUint32(h[28:], uint32(len(f.Payload)))
	binary.LittleEndian.PutUint32(h[32:], Checksum(f.Payload))
	dst = append(dst, h[:]...)
	dst = append(dst, f.RunID...)
	return append(dst, f.Payload...), nil
}

// DecodeFrame parses one frame, strictly: wrong magic, format version, kind,
// reserved byte or run id, a declared payload over MaxFramePayload, a length
// that does not match the buffer, or a payload whose CRC-32C differs from the
// header's are errors (wrapping ErrBadMagic, ErrBadFormatVersion,
// ErrUnknownKind, ErrBadHeader, ErrBadRunID, ErrOversized, ErrLengthMismatch,
// ErrBadChecksum, ErrTruncated). The payload of the result aliases b.
func DecodeFrame(b []byte) (Frame, error) {
	h, run, err := decodeFrame(b)
	if err != nil {
		return Frame{}, err
	}
	h.RunID = string(run)
	return h, nil
}

// decodeFrame is DecodeFrame without the run id string (returned as bytes,
// aliasing b) so that a receiver that compares it to its own run id does not
// allocate.
func decodeFrame(b []byte) (Frame, []byte, error) {
	if len(b) >= len(Magic) && string(b[:len(Magic)]) != Magic {
		return Frame{}, nil, fmt.Errorf("transport: decode frame: %w: %q", ErrBadMagic, b[:len(Magic)])
	}
	if len(b) < HeaderSize {
		return Frame{}, nil, fmt.Errorf("transport: decode frame: %w: %d bytes, header needs %d", ErrTruncated, len(b), HeaderSize)
	}
	if b[4] != FormatVersion {
		return Frame{}, nil, fmt.Errorf("transport: decode frame: %w: %d, want %d", ErrBadFormatVersion, b[4], FormatVersion)
	}
	f := Frame{Kind: Kind(b[5])}
	if !f.Kind.valid() {
		return Frame{}, nil, fmt.Errorf("transport: decode frame: %w: %d", ErrUnknownKind, b[5])
	}
	if b[7] != 0 {
		return Frame{}, nil, fmt.Errorf("transport: decode %s frame: %w: reserved byte is %d, want 0", f.Kind, ErrBadHeader, b[7])
	}
	runLen := int(b[6])
	f.Version = binary.LittleEndian.Uint64(b[8:])
	f.Actor = binary.LittleEndian.Uint32(b[16:])
	f.Seq = binary.LittleEndian.Uint64(b[20:])
	plen := binary.LittleEndian.Uint32(b[28:])
	sum := binary.LittleEndian.Uint32(b[32:])
	if plen > MaxFramePayload {
		return Frame{}, nil, fmt.Errorf("transport: decode %s frame: %w: header declares %d bytes, limit %d", f.Kind, ErrOversized, plen, MaxFramePayload)
	}
	if want := HeaderSize + runLen + int(plen); len(b) != want {
		return Frame{}, nil, fmt.Errorf("transport: decode %s frame: %w: %d bytes, header declares %d (run id %d + payload %d)", f.Kind, ErrLengthMismatch, len(b), want, runLen, plen)
	}
	run := b[HeaderSize : HeaderSize+runLen]
	if err := validateRunID(run); err != nil {
		return Frame{}, nil, fmt.Errorf("transport: decode %s frame: %w", f.Kind, err)
	}
	f.Payload = b[HeaderSize+runLen:]
	if got := Checksum(f.Payload); got != sum {
		return Frame{}, nil, fmt.Errorf("transport: decode %s frame v%d from actor %d seq %d: %w: payload CRC-32C %08x, header %08x", f.Kind, f.Version, f.Actor, f.Seq, ErrBadChecksum, got, sum)
	}
	return f, run, nil
}

// ParamsPointer is the payload of a KindParamsPointer frame: the size and
// CRC-32C of the parameters stored as object ObjectName(version) in the
// run's object store bucket (ParamsBucket).
type ParamsPointer struct {
	Size     uint64
	Checksum uint32
}

// pointerSize is the encoded size of a ParamsPointer: size (8), CRC (4).
const pointerSize = 12

// MaxParamsSize bounds the size a pointer may declare (16 GiB): a receiver
// refuses to fetch more.
const MaxParamsSize = 16 << 30

// AppendPointer appends the encoding of p.
func AppendPointer(dst []byte, p ParamsPointer) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, p.Size)
	return binary.LittleEndian.AppendUint32(dst, p.Checksum)
}

// DecodePointer parses the payload of a KindParamsPointer frame; errors wrap
// ErrBadPointer.
func DecodePointer(b []byte) (ParamsPointer, error) {
	if len(b) != pointerSize {
		return ParamsPointer{}, fmt.Errorf("transport: decode params pointer: %w: %d bytes, want %d", ErrBadPointer, len(b), pointerSize)
	}
	p := ParamsPointer{Size: binary.LittleEndian.Uint64(b), Checksum: binary.LittleEndian.Uint32(b[8:])}
	if p.Size > MaxParamsSize {
		return ParamsPointer{}, fmt.Errorf("transport: decode params pointer: %w: size %d over the limit %d", ErrBadPointer, p.Size, uint64(MaxParamsSize))
	}
	return p, nil
}
