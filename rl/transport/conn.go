package transport

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrUnauthorized is wrapped by Dial's error when the server refuses the
// token or the user and password (wrong or missing).
var ErrUnauthorized = errors.New("credentials refused by the NATS server (wrong or missing token, user or password)")

// DialConfig configures a client connection.
type DialConfig struct {
	// URL of the server, e.g. nats://127.0.0.1:4222 (a comma-separated list
	// for a cluster).
	URL string
	// Token for NATS token authentication ("" for an open server).
	Token string
	// User and Password authenticate as a user of the server
	// (ServerConfig.Users) instead of a token.
	User, Password string
	// Name identifies the client in the server's monitoring, e.g.
	// "tegrl-actor-3".
	Name string
	// RunID scopes every subject and bucket; see ValidateRunID.
	RunID string
	// Logger for disconnects, reconnects and asynchronous errors; nil
	// discards them.
	Logger *slog.Logger
	// ReconnectWait is the pause between reconnect attempts (plus up to
	// 50 ms of jitter); 0 means 150 ms. Reconnects never give up.
	ReconnectWait time.Duration
	// ReconnectBufSize is how many bytes of publishes are kept while
	// disconnected, sent after the reconnect; 0 means 8 MiB. Publishes
	// beyond it fail.
	ReconnectBufSize int
	// Timeout bounds the first connection; 0 means 5 s (or the context's
	// deadline when sooner).
	Timeout time.Duration
	// InProcess, when set, is the embedded server of URL in this process:
	// the connection then runs over an in-memory pipe to it instead of a
	// loopback socket, which saves the system calls and the kernel's copies
	// of every message.
	InProcess *Server
}

// Conn is a client connection to NATS for one run, which reconnects forever
// and counts its disconnects and reconnects.
type Conn struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	run string
	sub Subjects
	log *slog.Logger

	disconnects   atomic.Uint64
	reconnects    atomic.Uint64
	asyncErrors   atomic.Uint64
	slowConsumers atomic.Uint64
	permErrors    atomic.Uint64

	mu          sync.Mutex
	onReconnect []func()
}

// ConnStats are a connection's counters.
type ConnStats struct {
	Disconnects   uint64 `json:"disconnects"`
	Reconnects    uint64 `json:"reconnects"`
	AsyncErrors   uint64 `json:"async_errors"`
	SlowConsumers uint64 `json:"slow_consumers"`
	// PermissionErrors are publishes or subscriptions the server refused
	// to this user (also counted in AsyncErrors).
	PermissionErrors uint64 `json:"permission_errors"`
}

// Dial connects to the NATS server of cfg.URL. A wrong or missing token
// fails at once with an error wrapping ErrUnauthorized; after the first
// connection, the client reconnects forever.
func Dial(ctx context.Context, cfg DialConfig) (*Conn, error) {
	if err := ValidateRunID(cfg.RunID); err != nil {
		return nil, fmt.Errorf("transport: dial %s: %w", cfg.URL, err)
	}
	if cfg.URL == "" {
		return nil, errors.New("transport: dial: empty NATS URL")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("transport: dial %s: %w", cfg.URL, err)
	}
	c := &Conn{run: cfg.RunID, sub: SubjectsFor(cfg.RunID), log: cfg.Logger}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.log = c.log.With("component", "nats", "name", cfg.Name, "run", cfg.RunID)
	wait := cfg.ReconnectWait
	if wait <= 0 {
		wait = 150 * time.Millisecond
	}
	buf := cfg.ReconnectBufSize
	if buf <= 0 {
		buf = 8 << 20
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	opts := []nats.Option{
		nats.Name(cfg.Name),
		nats.Timeout(timeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(wait),
		nats.ReconnectJitter(50*time.Millisecond, 50*time.Millisecond),
		nats.ReconnectBufSize(buf),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			c.disconnects.Add(1)
			if nc.IsClosed() || err == nil {
				// Our own Close, or the server shutting down cleanly.
				c.log.Debug("NATS disconnected", "err", err)
				return
			}
			c.log.Warn("NATS disconnected; reconnecting", "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			c.reconnects.Add(1)
			c.log.Info("NATS reconnected", "url", nc.ConnectedUrlRedacted())
			c.mu.Lock()
			hooks := append([]func(){}, c.onReconnect...)
			c.mu.Unlock()
			for _, h := range hooks {
				h()
			}
		}),
		nats.ErrorHandler(func(_ *nats.Conn, s *nats.Subscription, err error) {
			c.asyncErrors.Add(1)
			subj := ""
			if s != nil {
				subj = s.Subject
			}
			if errors.Is(err, nats.ErrSlowConsumer) {
				c.slowConsumers.Add(1)
			}
			if errors.Is(err, nats.ErrPermissionViolation) {
				c.permErrors.Add(1)
			}
			c.log.Warn("NATS asynchronous error", "subject", subj, "err", err)
		}),
	}
	if cfg.Token != "" {
		opts = append(opts, nats.Token(cfg.Token))
	}
	if cfg.User != "" || cfg.Password != "" {
		opts = append(opts, nats.UserInfo(cfg.User, cfg.Password))
	}
	if cfg.InProcess != nil {
		// Checked here: over a pipe, the server's refusal reaches the
		// client as a closed pipe, after its authentication timeout.
		if !cfg.InProcess.admits(cfg.Token, cfg.User, cfg.Password) {
			return nil, fmt.Errorf("transport: dial the embedded server in process as %q: %w", cfg.Name, ErrUnauthorized)
		}
		opts = append(opts, nats.InProcessServer(cfg.InProcess.ns))
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		if errors.Is(err, nats.ErrAuthorization) || strings.Contains(strings.ToLower(err.Error()), "authorization") {
			return nil, fmt.Errorf("transport: dial %s as %q: %w: %w", cfg.URL, cfg.Name, ErrUnauthorized, err)
		}
		return nil, fmt.Errorf("transport: dial %s as %q: %w", cfg.URL, cfg.Name, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("transport: dial %s: JetStream context: %w", cfg.URL, err)
	}
	c.nc, c.js = nc, js
	return c, nil
}

// RunID is the run the connection serves.
func (c *Conn) RunID() string { return c.run }

// Subjects are the run's subjects.
func (c *Conn) Subjects() Subjects { return c.sub }

// NATS is the underlying connection.
func (c *Conn) NATS() *nats.Conn { return c.nc }

// JetStream is the connection's JetStream context.
func (c *Conn) JetStream() jetstream.JetStream { return c.js }

// Connected reports whether the connection is up now.
func (c *Conn) Connected() bool { return c.nc.IsConnected() }

// Stats returns the connection's counters.
func (c *Conn) Stats() ConnStats {
	return ConnStats{
		Disconnects:      c.disconnects.Load(),
		Reconnects:       c.reconnects.Load(),
		AsyncErrors:      c.asyncErrors.Load(),
		SlowConsumers:    c.slowConsumers.Load(),
		PermissionErrors: c.permErrors.Load(),
	}
}

// Flush waits until the server has processed everything published so far.
func (c *Conn) Flush(ctx context.Context) error {
	if err := c.nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("transport: flush to %s: %w", c.nc.ConnectedUrlRedacted(), err)
	}
	return nil
}

// Close closes the connection; publishes still buffered are dropped.
func (c *Conn) Close() { c.nc.Close() }

// onReconnected registers f to run (on NATS's callback goroutine; it must not
// block) after every reconnect.
func (c *Conn) onReconnected(f func()) {
	c.mu.Lock()
	c.onReconnect = append(c.onReconnect, f)
	c.mu.Unlock()
}

// admits reports whether the server would admit a client with these
// credentials, compared in constant time.
func (s *Server) admits(token, user, password string) bool {
	if len(s.users) == 0 {
		return subtle.ConstantTimeCompare([]byte(token), []byte(s.token)) == 1
	}
	ok := false
	for _, u := range s.users {
		name := subtle.ConstantTimeCompare([]byte(user), []byte(u.Name))
		pass := subtle.ConstantTimeCompare([]byte(password), []byte(u.Password))
		if name&pass == 1 {
			ok = true
		}
	}
	return ok && token == ""
}
