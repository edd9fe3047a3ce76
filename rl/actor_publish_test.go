package rl

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tegrl/tegrl/rl/transport"
)

// failingSink refuses every segment, as a connection to a broker that is
// gone does.
type failingSink struct{ transport.ActorTransport }

func (failingSink) PublishSegment(uint64, []byte) error {
	return errors.New("nats: outbound buffer limit exceeded")
}

// A broker that is gone fails every publish: the actor warns once per
// publishWarnEvery with the count, not once per segment.
func TestFailedPublishesWarnedSparingly(t *testing.T) {
	now := time.Unix(1000, 0)
	defer func(f func() time.Time) { timeNow = f }(timeNow)
	timeNow = func() time.Time { return now }
	var logs bytes.Buffer
	a := &Actor{tr: failingSink{}, log: slog.New(slog.NewTextHandler(&logs, nil))}
	for range 100 {
		a.publish()
	}
	now = now.Add(publishWarnEvery)
	for range 50 {
		a.publish()
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "failed=1 ") || !strings.Contains(lines[1], "failed=100 ") {
		t.Fatalf("%d warnings:\n%s", len(lines), logs.String())
	}
}
