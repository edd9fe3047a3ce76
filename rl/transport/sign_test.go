package transport

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// testKey is a fixed key: ed25519's seed 0x01 0x02 ... 0x20.
func testKey(t testing.TB, n byte) ed25519.PrivateKey {
	t.Helper()
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = n + byte(i)
	}
	return ed25519.NewKeyFromSeed(seed)
}

func pubOf(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }

func TestEnvelopeRoundTrip(t *testing.T) {
	key := testKey(t, 1)
	id := KeyIDOf(pubOf(key))
	sum := sha256.Sum256(pubOf(key))
	if !bytes.Equal(id[:], sum[:8]) || id.String() != hex.EncodeToString(sum[:8]) {
		t.Fatalf("key id %s, SHA-256 of the key %x", id, sum)
	}
	body := []byte("weights")
	sig := SignParams(key, "run", 3, body)
	b := AppendEnvelope(nil, id, sig, body)
	if len(b) != EnvelopeHeaderSize+len(body) || string(b[:5]) != "TGSG\x01" || b[5] != AlgEd25519 {
		t.Fatalf("envelope % x", b[:8])
	}
	e, err := DecodeEnvelope(b)
	if err != nil {
		t.Fatal(err)
	}
	if !e.Signed() || e.KeyID != id || !bytes.Equal(e.Sig[:], sig) || string(e.Body) != "weights" {
		t.Fatalf("decoded %+v", e)
	}
	if err := VerifyParams(pubOf(key), "run", 3, e.Body, &e); err != nil {
		t.Fatal(err)
	}
	u, err := DecodeEnvelope(AppendEnvelope(nil, id, nil, body))
	if err != nil || u.Signed() || u.KeyID != (KeyID{}) || string(u.Body) != "weights" {
		t.Fatalf("unsigned: %+v %v", u, err)
	}
	// An empty body is valid.
	if e, err := DecodeEnvelope(AppendEnvelope(nil, KeyID{}, nil, nil)); err != nil || len(e.Body) != 0 {
		t.Fatalf("empty body: %+v %v", e, err)
	}
}

func TestDecodeEnvelopeStrict(t *testing.T) {
	key := testKey(t, 1)
	good := AppendEnvelope(nil, KeyIDOf(pubOf(key)), SignParams(key, "r", 1, nil), nil)
	mod := func(i int, v byte) []byte {
		b := append([]byte(nil), good...)
		b[i] = v
		return b
	}
	unsignedWithSig := AppendEnvelope(nil, KeyID{}, nil, nil)
	unsignedWithSig[40] = 1
	for name, b := range map[string][]byte{
		"empty":                 nil,
		"short":                 good[:EnvelopeHeaderSize-1],
		"magic":                 mod(0, 'X'),
		"version":               mod(4, 2),
		"algorithm":             mod(5, 2),
		"reserved":              mod(6, 1),
		"reserved2":             mod(7, 1),
		"unsigned with a sig":   unsignedWithSig,
		"frame instead":         mustEncode(t, Frame{Kind: KindParams, RunID: "r", Version: 1, Payload: []byte("raw")}),
		"unsigned with a keyid": mod(5, AlgNone),
	} {
		if _, err := DecodeEnvelope(b); !errors.Is(err, ErrBadEnvelope) {
			t.Errorf("%s: %v, want ErrBadEnvelope", name, err)
		}
	}
}

func TestVerifyParams(t *testing.T) {
	key, other := testKey(t, 1), testKey(t, 2)
	params := []byte("the parameters of version 7")
	env := func(k ed25519.PrivateKey, run string, v uint64, p []byte) Envelope {
		e, err := DecodeEnvelope(AppendEnvelope(nil, KeyIDOf(pubOf(k)), SignParams(k, run, v, p), p))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	good := env(key, "run", 7, params)
	if err := VerifyParams(pubOf(key), "run", 7, params, &good); err != nil {
		t.Fatal(err)
	}
	tampered := append([]byte(nil), params...)
	tampered[3] ^= 1
	unsigned, _ := DecodeEnvelope(AppendEnvelope(nil, KeyID{}, nil, params))
	forged := good
	forged.Sig[0] ^= 1
	otherKey := env(other, "run", 7, params)
	// The other key's signature under the trusted key's id.
	posing := otherKey
	posing.KeyID = good.KeyID
	for _, c := range []struct {
		name    string
		run     string
		version uint64
		params  []byte
		env     Envelope
		want    error
	}{
		{"tampered parameters", "run", 7, tampered, good, ErrBadSignature},
		{"replayed as another version", "run", 8, params, good, ErrBadSignature},
		{"replayed in another run", "nur", 7, params, good, ErrBadSignature},
		{"forged signature", "run", 7, params, forged, ErrBadSignature},
		{"another key", "run", 7, params, otherKey, ErrWrongKey},
		{"another key posing", "run", 7, params, posing, ErrBadSignature},
		{"unsigned", "run", 7, params, unsigned, ErrUnsigned},
	} {
		if err := VerifyParams(pubOf(key), c.run, c.version, c.params, &c.env); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

func TestPolicySignature(t *testing.T) {
	key, other := testKey(t, 1), testKey(t, 2)
	file := []byte("a policy file's bytes")
	side := SignPolicy(key, file)
	want := fmt.Sprintf("tegrl-ed25519-v1 %x %x\n", []byte(pubOf(key)), ed25519.Sign(key, append([]byte("tegrl policy v1\x00"), func() []byte { s := sha256.Sum256(file); return s[:] }()...)))
	if string(side) != want {
		t.Fatalf("sidecar\n got %q\nwant %q", side, want)
	}
	if err := VerifyPolicy(pubOf(key), file, side); err != nil {
		t.Fatal(err)
	}
	// Without the final newline, or with the hex in uppercase: the same;
	// the tag is exact.
	if err := VerifyPolicy(pubOf(key), file, bytes.TrimSuffix(side, []byte("\n"))); err != nil {
		t.Errorf("without the newline: %v", err)
	}
	upper := append([]byte(policySigTag), bytes.ToUpper(side[len(policySigTag):])...)
	if err := VerifyPolicy(pubOf(key), file, upper); err != nil {
		t.Errorf("uppercase hex: %v", err)
	}
	if err := VerifyPolicy(pubOf(key), file, bytes.ToUpper(side)); !errors.Is(err, ErrBadSignature) {
		t.Errorf("uppercase tag: %v", err)
	}
	tampered := append([]byte(nil), file...)
	tampered[0] ^= 1
	for _, c := range []struct {
		name       string
		file, side []byte
		want       error
	}{
		{"tampered file", tampered, side, ErrBadSignature},
		{"no sidecar", file, nil, ErrUnsigned},
		{"signed by another key", file, SignPolicy(other, file), ErrWrongKey},
		{"garbage sidecar", file, []byte("hello"), ErrBadSignature},
		{"short signature", file, side[:len(side)-3], ErrBadSignature},
		{"two lines", file, append(append([]byte(nil), side...), side...), ErrBadSignature},
		{"huge", file, bytes.Repeat([]byte("a"), 2000), ErrBadSignature},
	} {
		if err := VerifyPolicy(pubOf(key), c.file, c.side); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if err := VerifyPolicy(nil, file, side); !errors.Is(err, ErrBadKey) {
		t.Errorf("no trusted key: %v", err)
	}
}

func TestKeyFiles(t *testing.T) {
	key := testKey(t, 1)
	pemPriv, err := MarshalPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pemPub, err := MarshalPublicKey(pubOf(key))
	if err != nil {
		t.Fatal(err)
	}
	k2, err := ParsePrivateKey(pemPriv)
	if err != nil || !k2.Equal(key) {
		t.Fatalf("private key round trip: %v", err)
	}
	p2, err := ParsePublicKey(pemPub)
	if err != nil || !p2.Equal(pubOf(key)) {
		t.Fatalf("public key round trip: %v", err)
	}
	p3, err := ParsePublicKey([]byte(hex.EncodeToString(pubOf(key)) + "\n"))
	if err != nil || !p3.Equal(pubOf(key)) {
		t.Fatalf("hex public key: %v", err)
	}
	for _, b := range [][]byte{nil, []byte("junk"), pemPriv} {
		if _, err := ParsePublicKey(b); !errors.Is(err, ErrBadKey) {
			t.Errorf("public key from %q: %v", b, err)
		}
	}
	if _, err := ParsePrivateKey(pemPub); !errors.Is(err, ErrBadKey) {
		t.Errorf("private key from a public one: %v", err)
	}
}

// TestSignedParamsDroppedAndCounted: an actor holding the learner's public
// key takes the learner's signed broadcasts and drops, and counts, every
// parameter message that is unsigned or whose signature does not verify:
// tampered parameters, a valid signature replayed under another version,
// a message signed by another key, an unsigned pointer, and a signed
// pointer whose object was replaced. It keeps the learner's parameters.
func TestSignedParamsDroppedAndCounted(t *testing.T) {
	s := startTestServer(t, ServerConfig{MaxPayload: 1 << 20})
	run := "signed"
	key, evil := testKey(t, 1), testKey(t, 9)
	lc := dialTest(t, s, run, "learner")
	l := newTestLearner(t, lc, LearnerConfig{SigningKey: key})
	ac := dialTest(t, s, run, "actor")
	a, err := NewActor(context.Background(), ac, ActorConfig{ID: 1, FetchTimeout: 10 * time.Second, TrustKey: pubOf(key)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	if err := l.PublishParams(1, []byte("weights-v1")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "signed params v1", func() bool { v, _, _ := a.LatestParams(); return v == 1 })

	id := KeyIDOf(pubOf(key))
	signed := func(k ed25519.PrivateKey, sigVersion, version uint64, signedBody, body []byte) []byte {
		env := AppendEnvelope(nil, KeyIDOf(pubOf(k)), SignParams(k, run, sigVersion, signedBody), body)
		return mustEncode(t, Frame{Kind: KindParams, RunID: run, Version: version, Payload: env})
	}
	tampered := signed(key, 5, 5, []byte("weights-v5"), []byte("weights-v6"))
	replayed := signed(key, 1, 9, []byte("weights-v1"), []byte("weights-v1"))
	otherKey := signed(evil, 5, 5, []byte("evil"), []byte("evil"))
	posing := AppendEnvelope(nil, id, SignParams(evil, run, 5, []byte("evil")), []byte("evil"))
	unsigned := mustEncode(t, Frame{Kind: KindParams, RunID: run, Version: 5, Payload: unsignedEnvelope([]byte("unsigned"))})
	unsignedPtr := mustEncode(t, Frame{Kind: KindParamsPointer, RunID: run, Version: 5,
		Payload: unsignedEnvelope(AppendPointer(nil, ParamsPointer{Size: 4, Checksum: Checksum([]byte("evil"))}))})
	// A pointer signed over the learner's parameters, to an object an
	// intruder replaced (its size and CRC-32C match the pointer).
	ctx := context.Background()
	obs, err := lc.JetStream().CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: ParamsBucket(run), Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := obs.PutBytes(ctx, ObjectName(7), []byte("evil")); err != nil {
		t.Fatal(err)
	}
	swapped := mustEncode(t, Frame{Kind: KindParamsPointer, RunID: run, Version: 7,
		Payload: AppendEnvelope(nil, id, SignParams(key, run, 7, []byte("good")), AppendPointer(nil, ParamsPointer{Size: 4, Checksum: Checksum([]byte("evil"))}))})
	raw := dialTest(t, s, run, "intruder")
	for _, m := range [][]byte{tampered, replayed, otherKey, mustEncode(t, Frame{Kind: KindParams, RunID: run, Version: 5, Payload: posing}), unsigned, unsignedPtr, swapped} {
		if err := raw.NATS().Publish(raw.Subjects().Params, m); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every forged message counted", func() bool {
		st := a.Stats()
		return st.ParamsUnsigned == 2 && st.ParamsBadSignature == 5
	})
	if v, p, _ := a.LatestParams(); v != 1 || string(p) != "weights-v1" {
		t.Errorf("actor took forged parameters: v%d %q", v, p)
	}
	if st := a.Stats(); st.ParamsErrors != 0 || st.ParamsReceived != 1 {
		t.Errorf("actor stats %+v", st)
	}
	// The learner's next broadcast still arrives, and is counted signed.
	if err := l.PublishParams(2, []byte("weights-v2")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "signed params v2", func() bool { v, _, _ := a.LatestParams(); return v == 2 })
	if st := l.Stats(); st.ParamsSigned != 2 || st.ParamsPublished != 2 {
		t.Errorf("learner stats %+v", st)
	}

	// A late actor that finds a forged latest frame in the key-value store
	// refuses it with the reason.
	kv, err := lc.JetStream().KeyValue(ctx, LatestBucket(run))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, LatestKey, tampered); err != nil {
		t.Fatal(err)
	}
	late, err := NewActor(ctx, dialTest(t, s, run, "late"), ActorConfig{ID: 2, TrustKey: pubOf(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	if _, _, ok := late.LatestParams(); ok {
		t.Error("late actor took the forged latest parameters")
	}
	if _, _, err := late.FetchLatestParams(ctx); !errors.Is(err, ErrBadSignature) {
		t.Errorf("fetch of a forged latest frame: %v", err)
	}
	if st := late.Stats(); st.ParamsBadSignature != 2 {
		t.Errorf("late actor stats %+v", st)
	}

	// Large signed parameters go through the object store and verify.
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	if err := l.PublishParams(3, big); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "signed params v3 via the object store", func() bool { v, _, _ := a.LatestParams(); return v == 3 })
	if _, p, _ := a.LatestParams(); !bytes.Equal(p, big) {
		t.Error("object store payload differs")
	}
	if st := l.Stats(); st.ParamsViaObjectStore != 1 || st.ParamsSigned != 3 {
		t.Errorf("learner stats %+v", st)
	}
}

// A learner without a signing key is refused by an actor holding a
// trusted key, and taken by one without.
func TestUnsignedLearnerRefused(t *testing.T) {
	s := startTestServer(t, ServerConfig{})
	run := "unsigned"
	l := newTestLearner(t, dialTest(t, s, run, "learner"), LearnerConfig{})
	strict, err := NewActor(context.Background(), dialTest(t, s, run, "strict"), ActorConfig{ID: 1, TrustKey: pubOf(testKey(t, 1))})
	if err != nil {
		t.Fatal(err)
	}
	defer strict.Close()
	lax := newTestActor(t, dialTest(t, s, run, "lax"), 2)
	if err := l.PublishParams(1, []byte("w")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the lax actor takes v1", func() bool { v, _, _ := lax.LatestParams(); return v == 1 })
	waitFor(t, "the strict actor refuses v1", func() bool { return strict.Stats().ParamsUnsigned == 1 })
	if _, _, ok := strict.LatestParams(); ok {
		t.Error("strict actor took unsigned parameters")
	}
	if _, err := NewActor(context.Background(), dialTest(t, s, run, "bad"), ActorConfig{ID: 3, TrustKey: []byte("short")}); !errors.Is(err, ErrBadKey) {
		t.Errorf("short trusted key: %v", err)
	}
	if _, err := NewLearner(dialTest(t, s, run, "bad-learner"), LearnerConfig{SigningKey: []byte("short")}); !errors.Is(err, ErrBadKey) {
		t.Errorf("short signing key: %v", err)
	}
}

func FuzzDecodeEnvelope(f *testing.F) {
	key := testKey(f, 1)
	f.Add(AppendEnvelope(nil, KeyIDOf(pubOf(key)), SignParams(key, "r", 1, []byte("p")), []byte("p")))
	f.Add(AppendEnvelope(nil, KeyID{}, nil, []byte("p")))
	f.Add([]byte("TGSG\x01\x01\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeEnvelope(b)
		if err != nil {
			if !errors.Is(err, ErrBadEnvelope) {
				t.Fatalf("error %v does not wrap ErrBadEnvelope", err)
			}
			return
		}
		// A decoded envelope re-encodes to the same bytes.
		var sig []byte
		if e.Signed() {
			sig = e.Sig[:]
		}
		if re := AppendEnvelope(nil, e.KeyID, sig, e.Body); !bytes.Equal(re, b) {
			t.Fatalf("re-encoded\n% x\nfrom\n% x", re, b)
		}
		// Verification never panics and never accepts what the key did
		// not sign.
		if err := VerifyParams(pubOf(key), "r", 1, e.Body, &e); err == nil && !bytes.Equal(e.Body, []byte("p")) {
			t.Fatalf("verified unsigned content %q", e.Body)
		}
	})
}

func FuzzDecodePolicySignature(f *testing.F) {
	key := testKey(f, 1)
	f.Add(SignPolicy(key, []byte("file")))
	f.Add([]byte("tegrl-ed25519-v1 00 00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, err := DecodePolicySignature(b)
		if err != nil {
			if !errors.Is(err, ErrBadSignature) {
				t.Fatalf("error %v does not wrap ErrBadSignature", err)
			}
			return
		}
		if len(ps.Key) != ed25519.PublicKeySize || len(ps.Sig) != ed25519.SignatureSize {
			t.Fatalf("decoded key %d bytes, signature %d", len(ps.Key), len(ps.Sig))
		}
		if err := VerifyPolicy(pubOf(key), []byte("file"), b); err == nil && !bytes.Equal(ps.Key, pubOf(key)) {
			t.Fatal("verified with another key")
		}
	})
}

func TestSigningKeyFiles(t *testing.T) {
	dir := t.TempDir()
	key, err := NewSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewSigningKey()
	if key.Equal(other) {
		t.Fatal("two fresh keys are equal")
	}
	pp, err := WriteSigningKey(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, SigningKeyFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("private key file mode %v, %v", info.Mode(), err)
	}
	back, err := ReadSigningKey(dir)
	if err != nil || !back.Equal(key) {
		t.Fatalf("read back: %v", err)
	}
	pub, err := ReadPublicKeyFile(pp)
	if err != nil || !pub.Equal(pubOf(key)) {
		t.Fatalf("public key file: %v", err)
	}
	// A key from a seed is the same every time, and differs by seed.
	if !SigningKeyFromSeed(1).Equal(SigningKeyFromSeed(1)) || SigningKeyFromSeed(1).Equal(SigningKeyFromSeed(2)) {
		t.Error("keys from seeds")
	}
	want := sha256.Sum256(append([]byte("tegrl signing key from seed v1\x00"), 7, 0, 0, 0, 0, 0, 0, 0))
	if !SigningKeyFromSeed(7).Equal(ed25519.NewKeyFromSeed(want[:])) {
		t.Error("key from seed 7 is not derived as documented")
	}
}

// The learner's Close tells its actors the run has ended; an actor
// holding a trusted key takes only an end signed with it, and counts the
// others.
func TestEndOfRun(t *testing.T) {
	s := startTestServer(t, ServerConfig{})
	run := "ending"
	key, evil := testKey(t, 1), testKey(t, 9)
	l, err := NewLearner(dialTest(t, s, run, "learner"), LearnerConfig{SigningKey: key})
	if err != nil {
		t.Fatal(err)
	}
	strict, err := NewActor(context.Background(), dialTest(t, s, run, "strict"), ActorConfig{ID: 1, TrustKey: pubOf(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer strict.Close()
	lax := newTestActor(t, dialTest(t, s, run, "lax"), 2)
	if err := l.PublishParams(4, []byte("w")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "v4 at both actors", func() bool {
		v1, _, _ := strict.LatestParams()
		v2, _, _ := lax.LatestParams()
		return v1 == 4 && v2 == 4
	})

	raw := dialTest(t, s, run, "intruder")
	end := func(k ed25519.PrivateKey, sigVersion, version uint64, body []byte) []byte {
		var id KeyID
		var sig []byte
		if k != nil {
			id, sig = KeyIDOf(pubOf(k)), SignEnd(k, run, sigVersion)
		}
		return mustEncode(t, Frame{Kind: KindEnd, RunID: run, Version: version, Payload: AppendEnvelope(nil, id, sig, body)})
	}
	forged := [][]byte{
		end(nil, 0, 4, nil),         // unsigned
		end(evil, 4, 4, nil),        // another key
		end(key, 3, 4, nil),         // signed for another version
		end(key, 4, 4, []byte("x")), // a body the signature does not cover
		mustEncode(t, Frame{Kind: KindEnd, RunID: run, Version: 4, // the learner's key id, another key's signature
			Payload: AppendEnvelope(nil, KeyIDOf(pubOf(key)), SignEnd(evil, run, 4), nil)}),
	}
	for _, m := range forged {
		if err := raw.NATS().Publish(raw.Subjects().Params, m); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every forged end counted", func() bool {
		st := strict.Stats()
		return st.ParamsUnsigned == 1 && st.ParamsBadSignature == 4
	})
	if strict.Ended() {
		t.Fatal("the strict actor took a forged end of run")
	}
	// The lax actor takes any end: the first one already.
	waitFor(t, "the lax actor ends", lax.Ended)

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if strict.Ended() {
		t.Fatal("Close ended the run: a learner stopped to be resumed must keep its actors")
	}
	if err := l.End(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the strict actor takes the learner's end", strict.Ended)
	if v, _, _ := strict.LatestParams(); v != 4 {
		t.Errorf("the end changed the parameters held: v%d", v)
	}
}

func TestVerifyEnd(t *testing.T) {
	key, evil := testKey(t, 1), testKey(t, 2)
	env := func(k ed25519.PrivateKey, run string, v uint64) Envelope {
		e, err := DecodeEnvelope(AppendEnvelope(nil, KeyIDOf(pubOf(k)), SignEnd(k, run, v), nil))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	good := env(key, "r", 7)
	if err := VerifyEnd(pubOf(key), "r", 7, &good); err != nil {
		t.Fatalf("good end: %v", err)
	}
	for name, c := range map[string]struct {
		run  string
		v    uint64
		e    Envelope
		want error
	}{
		"other run":     {"s", 7, good, ErrBadSignature},
		"other version": {"r", 8, good, ErrBadSignature},
		"other key":     {"r", 7, env(evil, "r", 7), ErrWrongKey},
		"unsigned":      {"r", 7, Envelope{}, ErrUnsigned},
	} {
		if err := VerifyEnd(pubOf(key), c.run, c.v, &c.e); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	// A params signature never verifies as an end (separate domains).
	p, _ := DecodeEnvelope(AppendEnvelope(nil, KeyIDOf(pubOf(key)), SignParams(key, "r", 7, nil), nil))
	if err := VerifyEnd(pubOf(key), "r", 7, &p); !errors.Is(err, ErrBadSignature) {
		t.Errorf("params signature as an end: %v", err)
	}
}
