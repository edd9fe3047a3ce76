package transport

import (
	"errors"
	"sync"
	"sync/atomic"
)

// inbox is the learner side shared by the NATS and channel transports: it
// checks segments against the run and the lag bound, tracks per-actor
// sequence numbers, queues on a bounded channel and counts every drop.
type inbox struct {
	run    string
	maxLag uint64

	version atomic.Uint64

	received, delivered, deliveredBytes atomic.Uint64
	decodeErrors, badChecksum           atomic.Uint64
	wrongRun, wrongKind, stale          atomic.Uint64
	overflow, lost, seqResets           atomic.Uint64
	statsReceived, statsDropped         atomic.Uint64
	actors                              atomic.Int64

	mu      sync.Mutex // guards closed, lastSeq; orders sends before close
	closed  bool
	lastSeq map[uint32]uint64
	out     chan Frame
}

func newInbox(run string, queue int, maxLag uint64) *inbox {
	return &inbox{run: run, maxLag: maxLag, lastSeq: make(map[uint32]uint64), out: make(chan Frame, queue)}
}

// receive handles the raw bytes of one message on the segment subject. It
// never panics on garbage: DecodeFrame is strict and bounds-checked.
func (in *inbox) receive(data []byte) {
	in.received.Add(1)
	f, run, err := decodeFrame(data)
	switch {
	case errors.Is(err, ErrBadChecksum):
		in.badChecksum.Add(1)
		return
	case err != nil:
		in.decodeErrors.Add(1)
		return
	case string(run) != in.run: // compared without allocating
		in.wrongRun.Add(1)
		return
	case f.Kind != KindSegment:
		in.wrongKind.Add(1)
		return
	}
	f.RunID = in.run
	in.accept(f)
}

// accept queues a decoded segment of the right run (received already
// counted).
func (in *inbox) accept(f Frame) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return
	}
	// Sequence gaps are counted before the lag and queue checks: they
	// measure what the network lost, not what the learner chose to drop.
	if last, ok := in.lastSeq[f.Actor]; ok {
		if f.Seq > last {
			in.lost.Add(f.Seq - last - 1)
		} else {
			in.seqResets.Add(1)
		}
	} else {
		in.actors.Add(1)
	}
	in.lastSeq[f.Actor] = f.Seq
	if cur := in.version.Load(); cur > in.maxLag && f.Version < cur-in.maxLag {
		in.stale.Add(1)
		return
	}
	select {
	case in.out <- f:
		in.delivered.Add(1)
		in.deliveredBytes.Add(uint64(len(f.Payload)))
	default:
		in.overflow.Add(1)
	}
}

// setVersion raises the current version (never lowers it).
func (in *inbox) setVersion(v uint64) {
	for {
		cur := in.version.Load()
		if v <= cur || in.version.CompareAndSwap(cur, v) {
			return
		}
	}
}

// close stops delivery and closes the channel; later messages are dropped
// silently.
func (in *inbox) close() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.closed {
		in.closed = true
		close(in.out)
	}
}

// stats fills the inbox's part of a LearnerStats.
func (in *inbox) stats() LearnerStats {
	return LearnerStats{
		Version:        in.version.Load(),
		Received:       in.received.Load(),
		Delivered:      in.delivered.Load(),
		DeliveredBytes: in.deliveredBytes.Load(),
		DecodeErrors:   in.decodeErrors.Load(),
		BadChecksum:    in.badChecksum.Load(),
		WrongRun:       in.wrongRun.Load(),
		WrongKind:      in.wrongKind.Load(),
		Stale:          in.stale.Load(),
		QueueOverflow:  in.overflow.Load(),
		LostSegments:   in.lost.Load(),
		SeqResets:      in.seqResets.Load(),
		Actors:         int(in.actors.Load()),
		StatsReceived:  in.statsReceived.Load(),
		StatsDropped:   in.statsDropped.Load(),
	}
}
