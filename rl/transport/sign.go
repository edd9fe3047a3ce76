package transport

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Signed parameters. The learner signs every parameter broadcast with an
// ed25519 key of its run; actors given the run's public key verify each
// one and drop, and count, those unsigned or whose signature does not
// verify. A signature covers the run id, the policy version and the
// SHA-256 of the parameters, so that a broadcast cannot be replayed under
// another version or run. Broadcasts too large for one message (the
// object store's pointer frames) carry the signature of the parameters
// they point to, checked once they are fetched.
//
// The payload of every params and params-pointer frame is an envelope
// (all integers little-endian):
//
//	offset size field
//	     0    4 magic "TGSG"
//	     4    1 envelope version (EnvelopeVersion)
//	     5    1 algorithm: 0 none (unsigned), 1 ed25519
//	     6    2 reserved, must be 0
//	     8    8 key id: the first 8 bytes of the SHA-256 of the public key
//	    16   64 signature
//	    80    m body: the parameters, or a ParamsPointer
//
// An unsigned envelope has key id and signature all zero.

// Envelope constants.
const (
	// EnvelopeMagic opens every envelope.
	EnvelopeMagic = "TGSG"
	// EnvelopeVersion is the envelope layout DecodeEnvelope accepts.
	EnvelopeVersion = 1
	// EnvelopeHeaderSize is the size of an envelope before its body.
	EnvelopeHeaderSize = 80
)

// Signature algorithms of an envelope.
const (
	AlgNone    = 0
	AlgEd25519 = 1
)

// Errors of envelopes, signatures and keys; returned wrapped, test with
// errors.Is.
var (
	ErrBadEnvelope  = errors.New("bad signed envelope")
	ErrUnsigned     = errors.New("not signed")
	ErrBadSignature = errors.New("signature does not verify")
	ErrWrongKey     = errors.New("signed by another key")
	ErrBadKey       = errors.New("bad key")
)

// KeyID is the id of a public key in envelopes and policy signatures: the
// first 8 bytes of its SHA-256.
type KeyID [8]byte

// String is the key id in hex.
func (k KeyID) String() string { return hex.EncodeToString(k[:]) }

// KeyIDOf returns the id of pub.
func KeyIDOf(pub ed25519.PublicKey) KeyID {
	sum := sha256.Sum256(pub)
	var id KeyID
	copy(id[:], sum[:8])
	return id
}

// Envelope is a decoded envelope. Body aliases the decoded buffer.
type Envelope struct {
	Alg   uint8
	KeyID KeyID
	Sig   [ed25519.SignatureSize]byte
	Body  []byte
}

// Signed reports whether the envelope carries a signature.
func (e *Envelope) Signed() bool { return e.Alg == AlgEd25519 }

// AppendEnvelope appends an envelope of body to dst: signed with sig by the
// key keyID when sig is not nil, unsigned otherwise.
func AppendEnvelope(dst []byte, keyID KeyID, sig []byte, body []byte) []byte {
	var h [EnvelopeHeaderSize]byte
	copy(h[0:4], EnvelopeMagic)
	h[4] = EnvelopeVersion
	if sig != nil {
		h[5] = AlgEd25519
		copy(h[8:16], keyID[:])
		copy(h[16:80], sig)
	}
	dst = append(dst, h[:]...)
	return append(dst, body...)
}

// DecodeEnvelope parses an envelope, strictly: a wrong magic, version,
// algorithm or reserved field, a short buffer, or an unsigned envelope
// with a key id or signature are errors wrapping ErrBadEnvelope. It does
// not verify the signature (VerifyParams does). The body aliases b.
func DecodeEnvelope(b []byte) (Envelope, error) {
	if len(b) < EnvelopeHeaderSize {
		return Envelope{}, fmt.Errorf("transport: decode envelope: %w: %d bytes, header needs %d", ErrBadEnvelope, len(b), EnvelopeHeaderSize)
	}
	if string(b[:4]) != EnvelopeMagic {
		return Envelope{}, fmt.Errorf("transport: decode envelope: %w: magic %q, want %q", ErrBadEnvelope, b[:4], EnvelopeMagic)
	}
	if b[4] != EnvelopeVersion {
		return Envelope{}, fmt.Errorf("transport: decode envelope: %w: version %d, want %d", ErrBadEnvelope, b[4], EnvelopeVersion)
	}
	if b[6] != 0 || b[7] != 0 {
		return Envelope{}, fmt.Errorf("transport: decode envelope: %w: reserved bytes %d %d, want 0", ErrBadEnvelope, b[6], b[7])
	}
	e := Envelope{Alg: b[5], Body: b[EnvelopeHeaderSize:]}
	copy(e.KeyID[:], b[8:16])
	copy(e.Sig[:], b[16:80])
	switch e.Alg {
	case AlgEd25519:
	case AlgNone:
		for _, c := range b[8:80] {
			if c != 0 {
				return Envelope{}, fmt.Errorf("transport: decode envelope: %w: unsigned, but key id or signature not zero", ErrBadEnvelope)
			}
		}
	default:
		return Envelope{}, fmt.Errorf("transport: decode envelope: %w: algorithm %d, want %d (none) or %d (ed25519)", ErrBadEnvelope, e.Alg, AlgNone, AlgEd25519)
	}
	return e, nil
}

// paramsDomain opens every signed parameter message, so that a signature
// made for anything else never verifies as one of parameters.
const paramsDomain = "tegrl params v1\x00"

// paramsMessageMax is the longest signed parameter message.
const paramsMessageMax = len(paramsDomain) + 1 + MaxRunIDLen + 8 + sha256.Size

// paramsMessage writes what a parameter signature signs into buf: the
// domain, the run id (length-prefixed), the version and the SHA-256 of
// the parameters.
func paramsMessage(buf *[paramsMessageMax]byte, run string, version uint64, params []byte) []byte {
	m := append(buf[:0], paramsDomain...)
	m = append(m, byte(len(run)))
	m = append(m, run...)
	m = binary.LittleEndian.AppendUint64(m, version)
	sum := sha256.Sum256(params)
	return append(m, sum[:]...)
}

// SignParams returns the signature of the parameters of version of run
// (which must be valid).
func SignParams(key ed25519.PrivateKey, run string, version uint64, params []byte) []byte {
	var buf [paramsMessageMax]byte
	return ed25519.Sign(key, paramsMessage(&buf, run, version, params))
}

// VerifyParams checks that env signs params as version of run with pub.
// Errors wrap ErrUnsigned, ErrWrongKey or ErrBadSignature.
func VerifyParams(pub ed25519.PublicKey, run string, version uint64, params []byte, env *Envelope) error {
	if !env.Signed() {
		return fmt.Errorf("transport: parameters v%d of run %q: %w", version, run, ErrUnsigned)
	}
	if id := KeyIDOf(pub); id != env.KeyID {
		return fmt.Errorf("transport: parameters v%d of run %q: %w: key %s, trusted key %s", version, run, ErrWrongKey, env.KeyID, id)
	}
	if len(run) > MaxRunIDLen {
		return fmt.Errorf("transport: parameters v%d: %w: run id of %d characters", version, ErrBadRunID, len(run))
	}
	var buf [paramsMessageMax]byte
	if !ed25519.Verify(pub, paramsMessage(&buf, run, version, params), env.Sig[:]) {
		return fmt.Errorf("transport: parameters v%d of run %q (%d bytes): %w", version, run, len(params), ErrBadSignature)
	}
	return nil
}

// endDomain opens every signed end message.
const endDomain = "tegrl end v1\x00"

// endMessage is what an end signature signs: the domain, the run id
// (length-prefixed) and the last version.
func endMessage(buf *[paramsMessageMax]byte, run string, version uint64) []byte {
	m := append(buf[:0], endDomain...)
	m = append(m, byte(len(run)))
	m = append(m, run...)
	return binary.LittleEndian.AppendUint64(m, version)
}

// SignEnd returns the signature of run's end message after version (run
// must be valid).
func SignEnd(key ed25519.PrivateKey, run string, version uint64) []byte {
	var buf [paramsMessageMax]byte
	return ed25519.Sign(key, endMessage(&buf, run, version))
}

// VerifyEnd checks that env signs the end of run after version with pub.
// Errors wrap ErrUnsigned, ErrWrongKey or ErrBadSignature.
func VerifyEnd(pub ed25519.PublicKey, run string, version uint64, env *Envelope) error {
	if !env.Signed() {
		return fmt.Errorf("transport: end of run %q: %w", run, ErrUnsigned)
	}
	if id := KeyIDOf(pub); id != env.KeyID {
		return fmt.Errorf("transport: end of run %q: %w: key %s, trusted key %s", run, ErrWrongKey, env.KeyID, id)
	}
	if len(run) > MaxRunIDLen {
		return fmt.Errorf("transport: end: %w: run id of %d characters", ErrBadRunID, len(run))
	}
	var buf [paramsMessageMax]byte
	if len(env.Body) != 0 || !ed25519.Verify(pub, endMessage(&buf, run, version), env.Sig[:]) {
		return fmt.Errorf("transport: end of run %q after v%d: %w", run, version, ErrBadSignature)
	}
	return nil
}

// Policy file signatures. A policy file is signed as a whole: its bytes
// stay exactly as written (the same seed gives the same file), and the
// signature travels beside it, in a sidecar file NAME.sig of one line:
//
//	tegrl-ed25519-v1 <public key, hex> <signature, hex>
//
// The signature is over "tegrl policy v1\x00" and the SHA-256 of the file.

// PolicySigSuffix is the suffix of a policy file's signature sidecar.
const PolicySigSuffix = ".sig"

const (
	policyDomain = "tegrl policy v1\x00"
	policySigTag = "tegrl-ed25519-v1"
	// maxPolicySig bounds a sidecar's size: its line is 210 bytes.
	maxPolicySig = 1024
)

// PolicySignature is a decoded policy signature sidecar.
type PolicySignature struct {
	Key ed25519.PublicKey
	Sig []byte
}

func policyMessage(file []byte) []byte {
	sum := sha256.Sum256(file)
	return append([]byte(policyDomain), sum[:]...)
}

// SignPolicy returns the sidecar (NAME.sig) of the policy file's bytes.
func SignPolicy(key ed25519.PrivateKey, file []byte) []byte {
	sig := ed25519.Sign(key, policyMessage(file))
	pub := key.Public().(ed25519.PublicKey)
	return fmt.Appendf(nil, "%s %s %s\n", policySigTag, hex.EncodeToString(pub), hex.EncodeToString(sig))
}

// DecodePolicySignature parses a sidecar strictly: one line of the tag,
// a 32-byte public key and a 64-byte signature in lowercase or uppercase
// hex, separated by single spaces, with an optional final newline. Errors
// wrap ErrBadSignature.
func DecodePolicySignature(b []byte) (PolicySignature, error) {
	if len(b) > maxPolicySig {
		return PolicySignature{}, fmt.Errorf("transport: policy signature: %w: %d bytes, limit %d", ErrBadSignature, len(b), maxPolicySig)
	}
	s := strings.TrimSuffix(string(b), "\n")
	f := strings.Split(s, " ")
	if len(f) != 3 || f[0] != policySigTag {
		return PolicySignature{}, fmt.Errorf("transport: policy signature: %w: want one line %q <public key hex> <signature hex>", ErrBadSignature, policySigTag)
	}
	pub, err := hex.DecodeString(f[1])
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return PolicySignature{}, fmt.Errorf("transport: policy signature: %w: public key is not %d bytes of hex", ErrBadSignature, ed25519.PublicKeySize)
	}
	sig, err := hex.DecodeString(f[2])
	if err != nil || len(sig) != ed25519.SignatureSize {
		return PolicySignature{}, fmt.Errorf("transport: policy signature: %w: signature is not %d bytes of hex", ErrBadSignature, ed25519.SignatureSize)
	}
	return PolicySignature{Key: pub, Sig: sig}, nil
}

// VerifyPolicy checks a policy file's bytes against its sidecar's bytes
// (nil: none) with the trusted key pub. Errors wrap ErrUnsigned (no
// sidecar), ErrWrongKey (signed by another key) or ErrBadSignature (a
// malformed sidecar, or a file changed since it was signed).
func VerifyPolicy(pub ed25519.PublicKey, file, sidecar []byte) error {
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("transport: verify policy: %w: trusted public key of %d bytes, want %d", ErrBadKey, len(pub), ed25519.PublicKeySize)
	}
	if sidecar == nil {
		return fmt.Errorf("transport: verify policy: %w: no %s signature", ErrUnsigned, PolicySigSuffix)
	}
	ps, err := DecodePolicySignature(sidecar)
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare(ps.Key, pub) != 1 {
		return fmt.Errorf("transport: verify policy: %w: key %s, trusted key %s", ErrWrongKey, KeyIDOf(ps.Key), KeyIDOf(pub))
	}
	if !ed25519.Verify(pub, policyMessage(file), ps.Sig) {
		return fmt.Errorf("transport: verify policy (%d bytes): %w: the file is not the one signed", len(file), ErrBadSignature)
	}
	return nil
}

// Key files are PEM: the private key as PKCS #8 ("PRIVATE KEY"), the public
// key as PKIX ("PUBLIC KEY"), as openssl writes them.

// MarshalPrivateKey returns key as PEM (PKCS #8).
func MarshalPrivateKey(key ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("transport: marshal private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// MarshalPublicKey returns pub as PEM (PKIX).
func MarshalPublicKey(pub ed25519.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("transport: marshal public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// ParsePrivateKey reads an ed25519 private key from PEM (PKCS #8).
func ParsePrivateKey(b []byte) (ed25519.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("transport: private key: %w: want a PEM \"PRIVATE KEY\" block", ErrBadKey)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("transport: private key: %w: %w", ErrBadKey, err)
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("transport: private key: %w: %T, want ed25519", ErrBadKey, k)
	}
	return ek, nil
}

// ParsePublicKey reads an ed25519 public key from PEM (PKIX), or from 64
// hex digits (as in a policy signature sidecar or checkpoint metadata).
func ParsePublicKey(b []byte) (ed25519.PublicKey, error) {
	if s := strings.TrimSpace(string(b)); len(s) == 2*ed25519.PublicKeySize {
		if raw, err := hex.DecodeString(s); err == nil {
			return ed25519.PublicKey(raw), nil
		}
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("transport: public key: %w: want a PEM \"PUBLIC KEY\" block or 64 hex digits", ErrBadKey)
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("transport: public key: %w: %w", ErrBadKey, err)
	}
	ek, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("transport: public key: %w: %T, want ed25519", ErrBadKey, k)
	}
	return ek, nil
}

// ReadPublicKeyFile reads a public key file (see ParsePublicKey).
func ReadPublicKeyFile(path string) (ed25519.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("transport: public key: %w", err)
	}
	k, err := ParsePublicKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}
