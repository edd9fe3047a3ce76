package transport

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// LearnerConfig configures the learner side.
type LearnerConfig struct {
	// QueueSize is the capacity of the Segments channel; segments arriving
	// when it is full are dropped and counted. 0 means 256.
	QueueSize int
	// MaxLag is the lag bound: a segment of policy version v is dropped when
	// v < current - MaxLag (current from SetVersion or PublishParams).
	// 0 accepts only the current version or newer.
	MaxLag uint64
	// KeepParams is how many parameter versions the object store keeps;
	// 0 means 3.
	KeepParams int
	// OnStats, when set, receives the actors' stats frames (on NATS's
	// callback goroutine: it must not block long).
	OnStats func(Frame)
	// JetStreamTimeout bounds each object store and key-value call of
	// PublishParams; 0 means 30 s.
	JetStreamTimeout time.Duration
	// Logger for failures; nil uses the connection's.
	Logger *slog.Logger
	// SigningKey, when set, signs every parameter broadcast (see
	// SignParams); nil sends them unsigned, which actors holding a trusted
	// key drop.
	SigningKey ed25519.PrivateKey
}

func (cfg *LearnerConfig) defaults() {
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 256
	}
	if cfg.KeepParams <= 0 {
		cfg.KeepParams = 3
	}
	if cfg.JetStreamTimeout <= 0 {
		cfg.JetStreamTimeout = 30 * time.Second
	}
}

// paramsHeadroom is kept free under the server's max payload when deciding
// whether parameters fit in one message, for the protocol and headers that
// ride along.
const paramsHeadroom = 1024

// Learner is the NATS learner side: it receives segments from the actors
// and broadcasts parameters to them.
type Learner struct {
	c   *Conn
	cfg LearnerConfig
	log *slog.Logger
	in  *inbox

	segSub, statsSub *nats.Subscription

	pubMu sync.Mutex // serialises PublishParams; guards buf, env, obs, kv, stored, newest
	buf   []byte
	env   []byte // the envelope of the frame in buf
	keyID KeyID
	obs   jetstream.ObjectStore
	kv    jetstream.KeyValue
	// stored are the object versions known to be in the store, oldest
	// first (nil until listed once).
	stored []uint64
	// newest is the highest version published.
	newest uint64

	paramsPublished, paramsObjects, paramsBytes, paramsErrors atomic.Uint64
	latestErrors, paramsSigned                                atomic.Uint64

	closeOnce sync.Once
}

// NewLearner subscribes to the run's segments (and stats, with OnStats).
// It does not own c: close c after the learner.
func NewLearner(c *Conn, cfg LearnerConfig) (*Learner, error) {
	cfg.defaults()
	l := &Learner{c: c, cfg: cfg, log: cfg.Logger, in: newInbox(c.run, cfg.QueueSize, cfg.MaxLag)}
	if l.log == nil {
		l.log = c.log
	}
	if cfg.SigningKey != nil {
		if len(cfg.SigningKey) != ed25519.PrivateKeySize {
			return nil, fmt.Errorf("transport: learner: %w: signing key of %d bytes, want %d", ErrBadKey, len(cfg.SigningKey), ed25519.PrivateKeySize)
		}
		l.keyID = KeyIDOf(cfg.SigningKey.Public().(ed25519.PublicKey))
	}
	sub, err := c.nc.Subscribe(c.sub.Traj, func(m *nats.Msg) { l.in.receive(m.Data) })
	if err != nil {
		return nil, fmt.Errorf("transport: learner: subscribe %s: %w", c.sub.Traj, err)
	}
	// The callback never blocks (it drops on a full queue), so generous
	// client-side limits only absorb bursts.
	if err := sub.SetPendingLimits(1<<16, 512<<20); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("transport: learner: pending limits on %s: %w", c.sub.Traj, err)
	}
	l.segSub = sub
	if cfg.OnStats != nil {
		l.statsSub, err = c.nc.Subscribe(c.sub.Stats, l.receiveStats)
		if err != nil {
			_ = sub.Unsubscribe()
			return nil, fmt.Errorf("transport: learner: subscribe %s: %w", c.sub.Stats, err)
		}
	}
	// Make sure the server has the subscriptions before the caller tells
	// actors to start.
	if err := c.nc.Flush(); err != nil {
		l.unsubscribe()
		return nil, fmt.Errorf("transport: learner: flush subscriptions: %w", err)
	}
	return l, nil
}

func (l *Learner) receiveStats(m *nats.Msg) {
	f, run, err := decodeFrame(m.Data)
	if err != nil || string(run) != l.c.run || f.Kind != KindStats {
		l.in.statsDropped.Add(1)
		return
	}
	l.in.statsReceived.Add(1)
	f.RunID = l.c.run
	l.cfg.OnStats(f)
}

// Segments delivers the valid segments, in arrival order (per actor, the
// order they were published). It is closed by Close.
func (l *Learner) Segments() <-chan Frame { return l.in.out }

// SetVersion sets the current policy version (it never goes down).
func (l *Learner) SetVersion(v uint64) { l.in.setVersion(v) }

// Version is the current policy version.
func (l *Learner) Version() uint64 { return l.in.version.Load() }

// Stats returns the learner's counters.
func (l *Learner) Stats() LearnerStats {
	s := l.in.stats()
	s.ParamsPublished = l.paramsPublished.Load()
	s.ParamsViaObjectStore = l.paramsObjects.Load()
	s.ParamsBytes = l.paramsBytes.Load()
	s.ParamsErrors = l.paramsErrors.Load()
	s.LatestErrors = l.latestErrors.Load()
	s.ParamsSigned = l.paramsSigned.Load()
	s.Conn = l.c.Stats()
	return s
}

// PublishParams broadcasts the parameters of version (and makes it the
// current version, see SetVersion) with a timeout of JetStreamTimeout per
// JetStream call. See PublishParamsContext.
func (l *Learner) PublishParams(version uint64, payload []byte) error {
	return l.PublishParamsContext(context.Background(), version, payload)
}

// PublishParamsContext broadcasts the parameters of version. Parameters that
// fit in one message (the server's max payload less the header) are
// published on the params subject; larger ones are put in the object store
// bucket ParamsBucket as ObjectName(version), the last KeepParams versions
// kept, and a pointer frame is published instead. Either frame is also
// stored under LatestKey in LatestBucket, for actors that connect later.
// Each frame's payload is an envelope (DecodeEnvelope) holding the
// parameters or the pointer, signed with SigningKey when there is one.
func (l *Learner) PublishParamsContext(ctx context.Context, version uint64, payload []byte) error {
	err := l.publishParams(ctx, version, payload)
	if err != nil {
		l.paramsErrors.Add(1)
		return err
	}
	l.paramsPublished.Add(1)
	l.paramsBytes.Add(uint64(len(payload)))
	return nil
}

func (l *Learner) publishParams(ctx context.Context, version uint64, payload []byte) error {
	l.pubMu.Lock()
	defer l.pubMu.Unlock()
	l.in.setVersion(version)
	subj := l.c.sub.Params
	direct := HeaderSize+len(l.c.run)+EnvelopeHeaderSize+len(payload)+paramsHeadroom <= int(l.c.nc.MaxPayload())
	var sig []byte
	if l.cfg.SigningKey != nil {
		sig = SignParams(l.cfg.SigningKey, l.c.run, version, payload)
	}
	var err error
	if direct {
		l.env = AppendEnvelope(l.env[:0], l.keyID, sig, payload)
		l.buf, err = AppendFrame(l.buf[:0], Frame{Kind: KindParams, RunID: l.c.run, Version: version, Payload: l.env})
		if err != nil {
			return fmt.Errorf("transport: publish params v%d: %w", version, err)
		}
		// Broadcast first: actors must not wait on JetStream.
		if err := l.c.nc.Publish(subj, l.buf); err != nil {
			return fmt.Errorf("transport: publish params v%d (%d bytes) on %s: %w", version, len(payload), subj, err)
		}
	} else {
		if uint64(len(payload)) > MaxParamsSize {
			return fmt.Errorf("transport: publish params v%d: %w: %d bytes, limit %d", version, ErrOversized, len(payload), uint64(MaxParamsSize))
		}
		if err := l.putObject(ctx, version, payload); err != nil {
			return err
		}
		ptr := AppendPointer(nil, ParamsPointer{Size: uint64(len(payload)), Checksum: Checksum(payload)})
		l.env = AppendEnvelope(l.env[:0], l.keyID, sig, ptr)
		l.buf, err = AppendFrame(l.buf[:0], Frame{Kind: KindParamsPointer, RunID: l.c.run, Version: version, Payload: l.env})
		if err != nil {
			return fmt.Errorf("transport: publish params pointer v%d: %w", version, err)
		}
		if err := l.c.nc.Publish(subj, l.buf); err != nil {
			return fmt.Errorf("transport: publish params pointer v%d on %s: %w", version, subj, err)
		}
		l.paramsObjects.Add(1)
	}
	if sig != nil {
		l.paramsSigned.Add(1)
	}
	// The key-value store keeps the newest version: an older one (a
	// caller's mistake; actors ignore it) must not replace it. The
	// broadcast has gone out, so a failure here (a connection the server
	// dropped under load, a JetStream timeout) only leaves actors that
	// join later with an older version: it is logged and counted, and the
	// next version tries again, instead of ending the run.
	if version >= l.newest {
		if err := l.putLatest(ctx, version, l.buf); err != nil {
			l.latestErrors.Add(1)
			l.log.Warn("latest parameters not stored; the next version retries", "version", version, "err", err)
		} else {
			l.newest = version
		}
	}
	if !direct {
		l.prune(ctx, version)
	}
	return nil
}

func (l *Learner) jsCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, l.cfg.JetStreamTimeout)
}

// putObject stores payload as object ObjectName(version), creating the
// bucket on first use.
func (l *Learner) putObject(ctx context.Context, version uint64, payload []byte) error {
	bucket := ParamsBucket(l.c.run)
	if l.obs == nil {
		cctx, cancel := l.jsCtx(ctx)
		obs, err := l.c.js.CreateOrUpdateObjectStore(cctx, jetstream.ObjectStoreConfig{
			Bucket:      bucket,
			Description: "tegrl parameters too large for one message, one object per version",
			Storage:     jetstream.FileStorage,
		})
		cancel()
		if err != nil {
			return fmt.Errorf("transport: publish params v%d: object store %s: %w", version, bucket, err)
		}
		l.obs = obs
	}
	cctx, cancel := l.jsCtx(ctx)
	defer cancel()
	meta := jetstream.ObjectMeta{Name: ObjectName(version), Opts: &jetstream.ObjectMetaOptions{ChunkSize: objectChunkSize(l.c.nc.MaxPayload())}}
	if _, err := l.obs.Put(cctx, meta, bytes.NewReader(payload)); err != nil {
		return fmt.Errorf("transport: publish params v%d: put %d bytes as %s/%s: %w", version, len(payload), bucket, ObjectName(version), err)
	}
	return nil
}

// objectChunkSize picks the object store chunk: fewer, larger chunks cost
// less per byte than the library's 128 KiB default, but each must fit in a
// message with room for its headers.
func objectChunkSize(maxPayload int64) uint32 {
	return uint32(max(min(maxPayload-4096, 1<<20), 4096))
}

// putLatest stores the frame just broadcast as the run's latest parameters.
func (l *Learner) putLatest(ctx context.Context, version uint64, frame []byte) error {
	bucket := LatestBucket(l.c.run)
	if l.kv == nil {
		cctx, cancel := l.jsCtx(ctx)
		kv, err := l.c.js.CreateOrUpdateKeyValue(cctx, jetstream.KeyValueConfig{
			Bucket:      bucket,
			Description: "tegrl latest parameters frame (params or pointer)",
			History:     1,
			Storage:     jetstream.FileStorage,
		})
		cancel()
		if err != nil {
			return fmt.Errorf("transport: publish params v%d: key-value %s: %w", version, bucket, err)
		}
		l.kv = kv
	}
	cctx, cancel := l.jsCtx(ctx)
	defer cancel()
	if _, err := l.kv.Put(cctx, LatestKey, frame); err != nil {
		return fmt.Errorf("transport: publish params v%d: put %s/%s: %w", version, bucket, LatestKey, err)
	}
	return nil
}

// prune records that version was just put and deletes all but the newest KeepParams objects. Failures are logged,
// not returned: the broadcast itself succeeded.
func (l *Learner) prune(ctx context.Context, version uint64) {
	if l.stored == nil {
		// First time (or after a learner restart): learn what the store
		// holds.
		cctx, cancel := l.jsCtx(ctx)
		infos, err := l.obs.List(cctx)
		cancel()
		if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
			l.log.Warn("listing parameter objects failed; old versions kept", "bucket", ParamsBucket(l.c.run), "err", err)
			return
		}
		l.stored = []uint64{}
		for _, in := range infos {
			if v, ok := parseObjectName(in.Name); ok {
				l.stored = append(l.stored, v)
			}
		}
		slices.Sort(l.stored)
	} else {
		// Versions normally rise, but keep the list sorted and unique
		// whatever the caller does.
		if i, found := slices.BinarySearch(l.stored, version); !found {
			l.stored = slices.Insert(l.stored, i, version)
		}
	}
	for len(l.stored) > l.cfg.KeepParams {
		old := l.stored[0]
		cctx, cancel := l.jsCtx(ctx)
		err := l.obs.Delete(cctx, ObjectName(old))
		cancel()
		if err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			l.log.Warn("deleting an old parameter object failed", "bucket", ParamsBucket(l.c.run), "object", ObjectName(old), "err", err)
			return
		}
		l.stored = l.stored[1:]
	}
}

func parseObjectName(name string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, "v")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}

func (l *Learner) unsubscribe() {
	if l.segSub != nil {
		_ = l.segSub.Unsubscribe()
	}
	if l.statsSub != nil {
		_ = l.statsSub.Unsubscribe()
	}
}

// Close unsubscribes and closes the Segments channel. The connection stays
// open. It does not end the run (End does): a learner stopped to be
// resumed from its checkpoint keeps its actors.
func (l *Learner) Close() error {
	l.closeOnce.Do(func() {
		l.unsubscribe()
		l.in.close()
	})
	return nil
}

// endFlushTimeout bounds End's wait for the message to reach the server.
const endFlushTimeout = 2 * time.Second

// End tells the actors that the run has finished: an end message, signed
// with SigningKey, on the params subject, after which they stop at once
// instead of waiting out their idle timeout.
func (l *Learner) End() error {
	l.pubMu.Lock()
	defer l.pubMu.Unlock()
	var sig []byte
	if l.cfg.SigningKey != nil {
		sig = SignEnd(l.cfg.SigningKey, l.c.run, l.newest)
	}
	env := AppendEnvelope(nil, l.keyID, sig, nil)
	frame, err := AppendFrame(nil, Frame{Kind: KindEnd, RunID: l.c.run, Version: l.newest, Payload: env})
	if err != nil {
		return err
	}
	if err := l.c.nc.Publish(l.c.sub.Params, frame); err != nil {
		return fmt.Errorf("publish end on %s: %w", l.c.sub.Params, err)
	}
	return l.c.nc.FlushTimeout(endFlushTimeout)
}
