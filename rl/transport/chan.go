package transport

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// ErrClosed is returned by a closed channel actor.
var ErrClosed = errors.New("transport closed")

// ChanLearner is the in-process transport: actors in the same process hand
// segments to the learner over a bounded channel, with the same checks and
// counters as the NATS Learner (lag bound, sequence gaps, queue overflow),
// and read parameters from a shared pointer. It lets one run compare NATS
// with plain channels.
type ChanLearner struct {
	in      *inbox
	onStats func(Frame)
	latest  atomic.Pointer[paramsSnap]

	paramsPublished, paramsBytes atomic.Uint64
	closeOnce                    sync.Once
}

// NewChanLearner returns the learner side of an in-process transport for
// run. Of cfg, QueueSize, MaxLag and OnStats apply (OnStats is called on
// the publishing actor's goroutine).
func NewChanLearner(run string, cfg LearnerConfig) (*ChanLearner, error) {
	if err := ValidateRunID(run); err != nil {
		return nil, fmt.Errorf("transport: channel learner: %w", err)
	}
	cfg.defaults()
	return &ChanLearner{in: newInbox(run, cfg.QueueSize, cfg.MaxLag), onStats: cfg.OnStats}, nil
}

// NewActor returns an actor side with the given id, connected to l.
func (l *ChanLearner) NewActor(id uint32) *ChanActor { return &ChanActor{l: l, id: id} }

// Segments delivers the valid segments; closed by Close.
func (l *ChanLearner) Segments() <-chan Frame { return l.in.out }

// SetVersion sets the current policy version (it never goes down).
func (l *ChanLearner) SetVersion(v uint64) { l.in.setVersion(v) }

// Version is the current policy version.
func (l *ChanLearner) Version() uint64 { return l.in.version.Load() }

// PublishParams makes a copy of payload the actors' latest parameters when
// version is newer than the current ones, and makes version current.
func (l *ChanLearner) PublishParams(version uint64, payload []byte) error {
	next := &paramsSnap{version: version, payload: append([]byte(nil), payload...)}
	for {
		cur := l.latest.Load()
		if cur != nil && version <= cur.version {
			break
		}
		if l.latest.CompareAndSwap(cur, next) {
			break
		}
	}
	l.in.setVersion(version)
	l.paramsPublished.Add(1)
	l.paramsBytes.Add(uint64(len(payload)))
	return nil
}

// Stats returns the learner's counters.
func (l *ChanLearner) Stats() LearnerStats {
	s := l.in.stats()
	s.ParamsPublished = l.paramsPublished.Load()
	s.ParamsBytes = l.paramsBytes.Load()
	return s
}

// Close closes the Segments channel; later segments are dropped.
func (l *ChanLearner) Close() error {
	l.closeOnce.Do(l.in.close)
	return nil
}

// ChanActor is the actor side of the in-process transport.
type ChanActor struct {
	l  *ChanLearner
	id uint32

	mu     sync.Mutex // guards seq, closed
	seq    uint64
	closed bool

	published, publishedBytes, publishErrors atomic.Uint64
}

// PublishSegment copies payload into a segment frame for the learner
// (dropped and counted there when its queue is full or it is stale). As
// over NATS, a segment refused here still takes its sequence number, so
// that the learner counts it lost.
func (a *ChanActor) PublishSegment(version uint64, payload []byte) error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return fmt.Errorf("transport: channel actor %d: publish segment: %w", a.id, ErrClosed)
	}
	a.seq++
	seq := a.seq
	a.mu.Unlock()
	if len(payload) > MaxFramePayload {
		a.publishErrors.Add(1)
		return fmt.Errorf("transport: channel actor %d: segment %d: %w: %d bytes, limit %d", a.id, seq, ErrOversized, len(payload), MaxFramePayload)
	}
	f := Frame{Kind: KindSegment, RunID: a.l.in.run, Version: version, Actor: a.id, Seq: seq, Payload: append([]byte(nil), payload...)}
	a.l.in.received.Add(1)
	a.l.in.accept(f)
	a.published.Add(1)
	a.publishedBytes.Add(uint64(len(payload)))
	return nil
}

// PublishStats hands a copy of payload to the learner's OnStats.
func (a *ChanActor) PublishStats(payload []byte) error {
	if a.l.onStats == nil {
		a.l.in.statsDropped.Add(1)
		return nil
	}
	v, _, _ := a.LatestParams()
	a.l.in.statsReceived.Add(1)
	a.l.onStats(Frame{Kind: KindStats, RunID: a.l.in.run, Version: v, Actor: a.id, Payload: append([]byte(nil), payload...)})
	return nil
}

// LatestParams returns the newest parameters the learner published.
func (a *ChanActor) LatestParams() (version uint64, payload []byte, ok bool) {
	p := a.l.latest.Load()
	if p == nil {
		return 0, nil, false
	}
	return p.version, p.payload, true
}

// Stats returns the actor's counters.
func (a *ChanActor) Stats() ActorStats {
	v, _, _ := a.LatestParams()
	return ActorStats{Actor: a.id, SegmentsPublished: a.published.Load(), SegmentBytes: a.publishedBytes.Load(), PublishErrors: a.publishErrors.Load(), ParamsVersion: v}
}

// Close makes later publishes fail with ErrClosed.
func (a *ChanActor) Close() error {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	return nil
}
