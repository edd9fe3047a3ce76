package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tegrl/tegrl/rl/transport"
)

// lockedBuffer is a bytes.Buffer safe to read while a command writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startListening runs the command args under ctx and waits up to wait
// for the first line it prints, the address it listens on. It returns
// that address, the command's result and its stderr.
func startListening(t *testing.T, ctx context.Context, wait time.Duration, args ...string) (string, <-chan error, *lockedBuffer) {
	t.Helper()
	var out lockedBuffer
	errb := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- execute(ctx, args, &out, errb) }()
	for deadline := time.Now().Add(wait); ; time.Sleep(10 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("%s exited: %v\nstderr: %s", args[0], err, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no URL printed; stderr: %s", errb.String())
		}
		if s := out.String(); strings.HasSuffix(s, "\n") {
			return strings.TrimSpace(s), done, errb
		}
	}
}

func TestBroker(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := t.TempDir()
	url, done, errb := startListening(t, ctx, 10*time.Second, "broker", "--listen", "127.0.0.1:0", "--token", "T", "--store", store, "--log-level", "warn")
	if !strings.HasPrefix(url, "nats://127.0.0.1:") || strings.HasSuffix(url, ":0") {
		t.Fatalf("URL %q", url)
	}
	c, err := transport.Dial(ctx, transport.DialConfig{URL: url, Token: "T", Name: "test", RunID: "broker"})
	if err != nil {
		t.Fatal(err)
	}
	// JetStream works: a learner can publish parameters that a late actor
	// fetches.
	l, err := transport.NewLearner(c, transport.LearnerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.PublishParams(1, []byte("w")); err != nil {
		t.Fatal(err)
	}
	act, err := transport.NewActor(ctx, c, transport.ActorConfig{ID: 1})
	if err != nil {
		t.Fatal(err)
	}
	if v, p, ok := act.LatestParams(); !ok || v != 1 || string(p) != "w" {
		t.Errorf("latest params v%d %q %v", v, p, ok)
	}
	_ = act.Close()
	_ = l.Close()
	c.Close()
	if _, err := transport.Dial(ctx, transport.DialConfig{URL: url, Token: "wrong", RunID: "broker"}); !errors.Is(err, transport.ErrUnauthorized) {
		t.Errorf("wrong token: %v", err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("broker: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("broker did not stop on cancel")
	}
	// At warn, the only log is the server's report of the refused token.
	for _, line := range strings.Split(strings.TrimSpace(errb.String()), "\n") {
		if !strings.Contains(line, "authentication error") {
			t.Errorf("unexpected log at --log-level warn: %q", line)
		}
	}
}

func TestBrokerFlagErrors(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{"--listen nope", "--listen \"nope\""},
		{"--listen 127.0.0.1:x", "port \"x\""},
		{"--max-payload 0", "--max-payload 0"},
	} {
		_, _, err := run(t, append([]string{"broker"}, strings.Fields(c.args)...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %s", c.args, err, c.want)
		}
	}
}
