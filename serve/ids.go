package serve

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"
)

// Decision ids are 128 random bits from crypto/rand in hex: they cannot
// be guessed, and differ across restarts. Outcomes are accepted only for
// ids this process issued, once each, while they are among the last
// DecisionLog decisions and younger than DecisionTTL.

// decisionID is a decision's id.
type decisionID [16]byte

func newDecisionID() decisionID {
	var id decisionID
	rand.Read(id[:]) // never fails (crypto/rand's Read panics rather)
	return id
}

func (id decisionID) String() string { return hex.EncodeToString(id[:]) }

// parseDecisionID parses an id as String writes it.
func parseDecisionID(s string) (decisionID, bool) {
	var id decisionID
	if len(s) != 2*len(id) {
		return id, false
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return id, false
	}
	return id, true
}

// decEntry is one issued decision.
type decEntry struct {
	id   decisionID
	arm  *arm
	at   time.Time
	used bool // holds a decision
	done bool // its outcome was reported
}

// decisionLog remembers the last decisions: a ring in issue order (the
// oldest is forgotten first) and an index by id.
type decisionLog struct {
	mu   sync.Mutex
	ttl  time.Duration
	now  func() time.Time
	ring []decEntry
	next int
	byID map[decisionID]int32
}

func newDecisionLog(n int, ttl time.Duration) *decisionLog {
	return &decisionLog{ttl: ttl, now: time.Now, ring: make([]decEntry, n), byID: make(map[decisionID]int32, n)}
}

// add records a decision of arm under a fresh id and returns it.
func (d *decisionLog) add(a *arm) decisionID {
	id := newDecisionID()
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.ring) == 0 {
		return id
	}
	e := &d.ring[d.next]
	if e.used {
		delete(d.byID, e.id)
	}
	*e = decEntry{id: id, arm: a, at: d.now(), used: true}
	d.byID[id] = int32(d.next)
	d.next = (d.next + 1) % len(d.ring)
	return id
}

// take returns the arm of decision id and marks its outcome received;
// errors when the id was never issued here, was forgotten or expired, or
// already has an outcome.
func (d *decisionLog) take(s string) (*arm, error) {
	id, ok := parseDecisionID(s)
	if !ok {
		return nil, fmt.Errorf("not a decision id of this service (32 hex digits)")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	k, ok := d.byID[id]
	if !ok {
		return nil, fmt.Errorf("unknown decision (not issued by this process, or beyond the last %d)", len(d.ring))
	}
	e := &d.ring[k]
	switch {
	case d.ttl > 0 && d.now().Sub(e.at) > d.ttl:
		return nil, fmt.Errorf("decision expired (older than %v)", d.ttl)
	case e.done:
		return nil, fmt.Errorf("outcome already reported")
	}
	e.done = true
	return e.arm, nil
}
