package transport

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrNoParams is returned by FetchLatestParams when the learner has not
// published any parameters for the run yet.
var ErrNoParams = errors.New("no parameters published yet")

// ActorConfig configures the actor side.
type ActorConfig struct {
	// ID identifies the actor in its frames; the learner tracks sequence
	// numbers per id, so ids must be unique within a run.
	ID uint32
	// FetchTimeout bounds each JetStream fetch of parameters (object store,
	// key-value); 0 means 30 s.
	FetchTimeout time.Duration
	// Logger for failures; nil uses the connection's.
	Logger *slog.Logger
	// TrustKey, when set, is the learner's public key: parameters whose
	// signature does not verify with it, or that are unsigned, are dropped
	// and counted (ActorStats.ParamsBadSignature, ParamsUnsigned). nil
	// takes parameters without checking signatures.
	TrustKey ed25519.PublicKey
}

// Actor is the NATS actor side: it publishes segments and stats and keeps
// the newest parameters the learner broadcast.
type Actor struct {
	c   *Conn
	cfg ActorConfig
	log *slog.Logger
	sub *nats.Subscription

	pubMu sync.Mutex // guards seq, buf
	seq   uint64
	buf   []byte

	latest atomic.Pointer[paramsSnap]

	// The params callback hands pointers and re-fetch requests to the
	// fetcher goroutine, so that a slow object store fetch never blocks
	// the subscription; only the newest pointer is kept.
	pending atomic.Pointer[pendingPointer]
	refetch atomic.Bool
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}

	fetchMu sync.Mutex // serialises fetches; guards obs, kv
	obs     jetstream.ObjectStore
	kv      jetstream.KeyValue

	published, publishedBytes, publishErrors atomic.Uint64
	paramsReceived, paramsFetched            atomic.Uint64
	paramsIgnored, paramsErrors              atomic.Uint64
	paramsUnsigned, paramsBadSig             atomic.Uint64

	// ended is set by the learner's end message (verified like parameters).
	ended atomic.Bool

	closeOnce sync.Once
}

type paramsSnap struct {
	version uint64
	payload []byte
}

type pendingPointer struct {
	version uint64
	ptr     ParamsPointer
	env     Envelope // the pointer frame's, whose signature covers the parameters
}

// NewActor subscribes to the run's parameters, then fetches the latest ones
// already published (if any), so that LatestParams has them when NewActor
// returns. It does not own c: close c after the actor.
func NewActor(ctx context.Context, c *Conn, cfg ActorConfig) (*Actor, error) {
	if cfg.FetchTimeout <= 0 {
		cfg.FetchTimeout = 30 * time.Second
	}
	if cfg.TrustKey != nil && len(cfg.TrustKey) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("transport: actor %d: %w: trusted key of %d bytes, want %d", cfg.ID, ErrBadKey, len(cfg.TrustKey), ed25519.PublicKeySize)
	}
	a := &Actor{c: c, cfg: cfg, log: cfg.Logger, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if a.log == nil {
		a.log = c.log
	}
	a.log = a.log.With("actor", cfg.ID)
	sub, err := c.nc.Subscribe(c.sub.Params, a.onParams)
	if err != nil {
		return nil, fmt.Errorf("transport: actor %d: subscribe %s: %w", cfg.ID, c.sub.Params, err)
	}
	a.sub = sub
	if err := c.nc.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("transport: actor %d: flush subscription: %w", cfg.ID, err)
	}
	go a.fetcher()
	// Parameters broadcast while this actor was away are in the key-value
	// store; after a reconnect, look again.
	c.onReconnected(func() {
		a.refetch.Store(true)
		a.signal()
	})
	if _, _, err := a.FetchLatestParams(ctx); err != nil && !errors.Is(err, ErrNoParams) {
		a.log.Warn("fetching the latest parameters failed; waiting for the next broadcast", "err", err)
	}
	return a, nil
}

// ID is the actor's id.
func (a *Actor) ID() uint32 { return a.cfg.ID }

// PublishSegment sends one trajectory segment produced with policy version.
// Frames carry the actor id and a sequence number that rises by one per
// call, whether the publish succeeds or not: a segment that could not be
// sent leaves a gap that the learner counts as lost
// (LearnerStats.LostSegments) when the actor's next segment arrives. While
// disconnected, publishes are buffered (up to DialConfig.ReconnectBufSize)
// and sent after the reconnect; beyond that they fail. payload is not kept.
func (a *Actor) PublishSegment(version uint64, payload []byte) error {
	a.pubMu.Lock()
	defer a.pubMu.Unlock()
	a.seq++
	var err error
	a.buf, err = AppendFrame(a.buf[:0], Frame{Kind: KindSegment, RunID: a.c.run, Version: version, Actor: a.cfg.ID, Seq: a.seq, Payload: payload})
	if err != nil {
		a.publishErrors.Add(1)
		return fmt.Errorf("transport: actor %d: segment %d: %w", a.cfg.ID, a.seq, err)
	}
	if err := a.c.nc.Publish(a.c.sub.Traj, a.buf); err != nil {
		a.publishErrors.Add(1)
		return fmt.Errorf("transport: actor %d: publish segment %d (%d bytes) on %s: %w", a.cfg.ID, a.seq, len(payload), a.c.sub.Traj, err)
	}
	a.published.Add(1)
	a.publishedBytes.Add(uint64(len(payload)))
	return nil
}

// PublishStats sends the actor's statistics (JSON) on the stats subject,
// tagged with the version of the parameters it holds.
func (a *Actor) PublishStats(payload []byte) error {
	v, _, _ := a.LatestParams()
	a.pubMu.Lock()
	defer a.pubMu.Unlock()
	var err error
	a.buf, err = AppendFrame(a.buf[:0], Frame{Kind: KindStats, RunID: a.c.run, Version: v, Actor: a.cfg.ID, Payload: payload})
	if err != nil {
		return fmt.Errorf("transport: actor %d: stats: %w", a.cfg.ID, err)
	}
	if err := a.c.nc.Publish(a.c.sub.Stats, a.buf); err != nil {
		return fmt.Errorf("transport: actor %d: publish stats on %s: %w", a.cfg.ID, a.c.sub.Stats, err)
	}
	return nil
}

// LatestParams returns the newest parameters received, without locking.
// The payload is shared: do not modify it.
func (a *Actor) LatestParams() (version uint64, payload []byte, ok bool) {
	p := a.latest.Load()
	if p == nil {
		return 0, nil, false
	}
	return p.version, p.payload, true
}

// offer keeps (version, payload) when newer than what the actor holds.
func (a *Actor) offer(version uint64, payload []byte) bool {
	next := &paramsSnap{version: version, payload: payload}
	for {
		cur := a.latest.Load()
		if cur != nil && version <= cur.version {
			a.paramsIgnored.Add(1)
			return false
		}
		if a.latest.CompareAndSwap(cur, next) {
			a.paramsReceived.Add(1)
			return true
		}
	}
}

func (a *Actor) heldVersion() (uint64, bool) {
	if p := a.latest.Load(); p != nil {
		return p.version, true
	}
	return 0, false
}

// onParams handles one message on the params subject; garbage is counted,
// never fatal.
func (a *Actor) onParams(m *nats.Msg) {
	f, run, err := decodeFrame(m.Data)
	if err != nil {
		a.paramsErrors.Add(1)
		a.log.Debug("undecodable params message dropped", "err", err)
		return
	}
	if string(run) != a.c.run {
		a.paramsErrors.Add(1)
		return
	}
	if f.Kind != KindParams && f.Kind != KindParamsPointer && f.Kind != KindEnd {
		a.paramsErrors.Add(1)
		return
	}
	env, err := DecodeEnvelope(f.Payload)
	if err != nil {
		a.paramsErrors.Add(1)
		a.log.Debug("params message without a valid envelope dropped", "err", err)
		return
	}
	switch f.Kind {
	case KindEnd:
		if a.cfg.TrustKey != nil {
			if err := VerifyEnd(a.cfg.TrustKey, a.c.run, f.Version, &env); err != nil {
				a.countBad(err)
				return
			}
		}
		a.ended.Store(true)
	case KindParams:
		if a.verify(f.Version, env.Body, &env) != nil {
			return
		}
		// m.Data is this message's own buffer: keep it without a copy.
		a.offer(f.Version, env.Body)
	case KindParamsPointer:
		if held, ok := a.heldVersion(); ok && f.Version <= held {
			a.paramsIgnored.Add(1)
			return
		}
		ptr, err := DecodePointer(env.Body)
		if err != nil {
			a.paramsErrors.Add(1)
			return
		}
		// The signature covers the parameters the pointer names, checked
		// once they are fetched; an unsigned pointer is not worth a fetch.
		if a.cfg.TrustKey != nil && !env.Signed() {
			a.verify(f.Version, nil, &env)
			return
		}
		next := &pendingPointer{version: f.Version, ptr: ptr, env: env}
		for {
			cur := a.pending.Load()
			if cur != nil && cur.version >= next.version {
				a.paramsIgnored.Add(1)
				return
			}
			if a.pending.CompareAndSwap(cur, next) {
				break
			}
		}
		a.signal()
	}
}

// verify checks the signature of the parameters of version when the actor
// holds a trusted key, and counts a failure.
func (a *Actor) verify(version uint64, params []byte, env *Envelope) error {
	if a.cfg.TrustKey == nil {
		return nil
	}
	err := VerifyParams(a.cfg.TrustKey, a.c.run, version, params, env)
	a.countBad(err)
	return err
}

// countBad counts a failed verification (nil: none).
func (a *Actor) countBad(err error) {
	switch {
	case err == nil:
	case errors.Is(err, ErrUnsigned):
		a.paramsUnsigned.Add(1)
		a.log.Debug("unsigned message dropped", "err", err)
	default:
		a.paramsBadSig.Add(1)
		a.log.Debug("message with a bad signature dropped", "err", err)
	}
}

// Ended reports whether the learner said the run has ended (with a
// trusted key, in a message signed with it).
func (a *Actor) Ended() bool { return a.ended.Load() }

func (a *Actor) signal() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// fetcher runs the JetStream fetches the params callback asks for.
func (a *Actor) fetcher() {
	defer close(a.done)
	for {
		select {
		case <-a.stop:
			return
		case <-a.wake:
		}
		if a.refetch.Swap(false) {
			ctx, cancel := context.WithTimeout(context.Background(), a.cfg.FetchTimeout)
			_, _, err := a.FetchLatestParams(ctx)
			cancel()
			if err != nil && !errors.Is(err, ErrNoParams) {
				a.log.Warn("fetching the latest parameters after a reconnect failed", "err", err)
			}
		}
		if p := a.pending.Swap(nil); p != nil {
			if held, ok := a.heldVersion(); ok && p.version <= held {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), a.cfg.FetchTimeout)
			err := a.fetchObject(ctx, p.version, p.ptr, &p.env)
			cancel()
			if err != nil {
				a.log.Warn("fetching parameters from the object store failed", "version", p.version, "err", err)
			}
		}
	}
}

// fetchObject reads the parameters of version from the object store and
// keeps them if their size and CRC-32C match ptr and, with a trusted key,
// the signature of env verifies.
func (a *Actor) fetchObject(ctx context.Context, version uint64, ptr ParamsPointer, env *Envelope) error {
	a.fetchMu.Lock()
	defer a.fetchMu.Unlock()
	bucket, name := ParamsBucket(a.c.run), ObjectName(version)
	if a.obs == nil {
		obs, err := a.c.js.ObjectStore(ctx, bucket)
		if err != nil {
			a.paramsErrors.Add(1)
			return fmt.Errorf("transport: actor %d: object store %s: %w", a.cfg.ID, bucket, err)
		}
		a.obs = obs
	}
	data, err := readObject(ctx, a.obs, name, ptr.Size)
	if err != nil {
		a.paramsErrors.Add(1)
		return fmt.Errorf("transport: actor %d: get %s/%s: %w", a.cfg.ID, bucket, name, err)
	}
	if sum := Checksum(data); sum != ptr.Checksum {
		a.paramsErrors.Add(1)
		return fmt.Errorf("transport: actor %d: %s/%s: %w: CRC-32C %08x, pointer says %08x", a.cfg.ID, bucket, name, ErrBadChecksum, sum, ptr.Checksum)
	}
	if err := a.verify(version, data, env); err != nil {
		return fmt.Errorf("transport: actor %d: %s/%s: %w", a.cfg.ID, bucket, name, err)
	}
	a.paramsFetched.Add(1)
	a.offer(version, data)
	return nil
}

// readObject reads object name, which must be size bytes, into one buffer of
// that size (GetBytes would grow a buffer by doubling: twice the memory).
func readObject(ctx context.Context, obs jetstream.ObjectStore, name string, size uint64) ([]byte, error) {
	r, err := obs.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	info, err := r.Info()
	if err != nil {
		return nil, err
	}
	if info.Size != size {
		return nil, fmt.Errorf("%w: object has %d bytes, pointer says %d", ErrLengthMismatch, info.Size, size)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, fmt.Errorf("reading %d bytes: %w", size, err)
	}
	// Read to the end, where the library checks the object's SHA-256.
	var one [1]byte
	if n, err := r.Read(one[:]); n != 0 || err != io.EOF {
		if err == nil || err == io.EOF {
			err = fmt.Errorf("%w: object longer than %d bytes", ErrLengthMismatch, size)
		}
		return nil, err
	}
	return data, nil
}

// FetchLatestParams reads the newest parameters the learner stored (key
// LatestKey of LatestBucket, then the object store for large ones), keeps
// them if newer than those held, and returns what LatestParams now returns.
// With nothing published yet the error wraps ErrNoParams.
func (a *Actor) FetchLatestParams(ctx context.Context) (version uint64, payload []byte, err error) {
	f, err := a.latestFrame(ctx)
	if err != nil {
		return 0, nil, err
	}
	if f.Kind != KindParams && f.Kind != KindParamsPointer {
		a.paramsErrors.Add(1)
		return 0, nil, fmt.Errorf("transport: actor %d: latest parameters: %w: %s frame", a.cfg.ID, ErrUnknownKind, f.Kind)
	}
	env, err := DecodeEnvelope(f.Payload)
	if err != nil {
		a.paramsErrors.Add(1)
		return 0, nil, fmt.Errorf("transport: actor %d: latest parameters: %w", a.cfg.ID, err)
	}
	switch f.Kind {
	case KindParams:
		if err := a.verify(f.Version, env.Body, &env); err != nil {
			return 0, nil, fmt.Errorf("transport: actor %d: latest parameters: %w", a.cfg.ID, err)
		}
		a.paramsFetched.Add(1)
		a.offer(f.Version, env.Body)
	case KindParamsPointer:
		if held, ok := a.heldVersion(); !ok || f.Version > held {
			ptr, err := DecodePointer(env.Body)
			if err != nil {
				a.paramsErrors.Add(1)
				return 0, nil, fmt.Errorf("transport: actor %d: latest parameters: %w", a.cfg.ID, err)
			}
			if err := a.fetchObject(ctx, f.Version, ptr, &env); err != nil {
				return 0, nil, err
			}
		}
	}
	version, payload, _ = a.LatestParams()
	return version, payload, nil
}

// latestFrame reads and decodes the frame under LatestKey.
func (a *Actor) latestFrame(ctx context.Context) (Frame, error) {
	a.fetchMu.Lock()
	defer a.fetchMu.Unlock()
	bucket := LatestBucket(a.c.run)
	if a.kv == nil {
		kv, err := a.c.js.KeyValue(ctx, bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return Frame{}, fmt.Errorf("transport: actor %d: key-value %s: %w", a.cfg.ID, bucket, ErrNoParams)
		}
		if err != nil {
			return Frame{}, fmt.Errorf("transport: actor %d: key-value %s: %w", a.cfg.ID, bucket, err)
		}
		a.kv = kv
	}
	e, err := a.kv.Get(ctx, LatestKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Frame{}, fmt.Errorf("transport: actor %d: %s/%s: %w", a.cfg.ID, bucket, LatestKey, ErrNoParams)
	}
	if err != nil {
		return Frame{}, fmt.Errorf("transport: actor %d: get %s/%s: %w", a.cfg.ID, bucket, LatestKey, err)
	}
	f, run, err := decodeFrame(e.Value())
	if err != nil {
		a.paramsErrors.Add(1)
		return Frame{}, fmt.Errorf("transport: actor %d: %s/%s: %w", a.cfg.ID, bucket, LatestKey, err)
	}
	if string(run) != a.c.run {
		a.paramsErrors.Add(1)
		return Frame{}, fmt.Errorf("transport: actor %d: %s/%s: %w: frame of run %q", a.cfg.ID, bucket, LatestKey, ErrBadRunID, run)
	}
	f.RunID = a.c.run
	return f, nil
}

// Stats returns the actor's counters.
func (a *Actor) Stats() ActorStats {
	v, _ := a.heldVersion()
	return ActorStats{
		Actor:              a.cfg.ID,
		SegmentsPublished:  a.published.Load(),
		SegmentBytes:       a.publishedBytes.Load(),
		PublishErrors:      a.publishErrors.Load(),
		ParamsVersion:      v,
		ParamsReceived:     a.paramsReceived.Load(),
		ParamsFetched:      a.paramsFetched.Load(),
		ParamsIgnored:      a.paramsIgnored.Load(),
		ParamsErrors:       a.paramsErrors.Load(),
		ParamsUnsigned:     a.paramsUnsigned.Load(),
		ParamsBadSignature: a.paramsBadSig.Load(),
		Conn:               a.c.Stats(),
	}
}

// Close unsubscribes and stops the fetcher. The connection stays open.
func (a *Actor) Close() error {
	a.closeOnce.Do(func() {
		_ = a.sub.Unsubscribe()
		close(a.stop)
		<-a.done
	})
	return nil
}
