package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// ServerConfig configures an embedded NATS server.
type ServerConfig struct {
	// Host to listen on; "" means 127.0.0.1 (loopback only).
	Host string
	// Port to listen on; 0 picks a random free port.
	Port int
	// Token, when not empty, is required from every client.
	Token string
	// Users, when not empty, are the only clients admitted, each with the
	// permissions of its role (User.Role); not together with Token.
	Users []User
	// JetStreamDir is where JetStream keeps streams, the key-value and the
	// object store; "" uses a fresh temporary directory, removed by Shutdown.
	JetStreamDir string
	// MaxPayload is the largest message in bytes; 0 means NATS's default
	// (1 MiB). At most 64 MiB.
	MaxPayload int
	// Logger receives the server's log: notices at debug level (so that it
	// is quiet at info), warnings and errors as such. nil: no log at all.
	Logger *slog.Logger
	// ReadyTimeout bounds the wait for the server to accept connections;
	// 0 means 10 s.
	ReadyTimeout time.Duration
}

// Server is an embedded NATS server with JetStream.
type Server struct {
	ns     *server.Server
	token  string // ServerConfig.Token, checked by in-process dials
	users  []User // ServerConfig.Users, checked by in-process dials
	dir    string
	ownDir bool // dir is a temporary directory StartServer made
	once   sync.Once
}

// StartServer starts an embedded NATS server with JetStream and waits until
// it accepts connections.
func StartServer(cfg ServerConfig) (*Server, error) {
	host := cfg.Host
	if host == "" {
		host = "127.0.0.1"
	}
	if cfg.Port < 0 || cfg.Port > 65535 {
		return nil, fmt.Errorf("transport: start NATS server: port %d out of range 0..65535", cfg.Port)
	}
	if cfg.MaxPayload < 0 || cfg.MaxPayload > MaxFramePayload {
		return nil, fmt.Errorf("transport: start NATS server: max payload %d out of range 0..%d", cfg.MaxPayload, MaxFramePayload)
	}
	if cfg.Token != "" && len(cfg.Users) > 0 {
		return nil, errors.New("transport: start NATS server: a token and users together; give one")
	}
	susers, err := serverUsers(cfg.Users)
	if err != nil {
		return nil, fmt.Errorf("transport: start NATS server: %w", err)
	}
	port := cfg.Port
	if port == 0 {
		port = server.RANDOM_PORT // Options' 0 means NATS's default 4222
	}
	s := &Server{dir: cfg.JetStreamDir, token: cfg.Token, users: append([]User(nil), cfg.Users...)}
	if s.dir == "" {
		d, err := os.MkdirTemp("", "tegrl-jetstream-")
		if err != nil {
			return nil, fmt.Errorf("transport: start NATS server: JetStream directory: %w", err)
		}
		s.dir, s.ownDir = d, true
	}
	opts := &server.Options{
		ServerName:    "tegrl",
		Host:          host,
		Port:          port,
		Authorization: cfg.Token,
		JetStream:     true,
		StoreDir:      s.dir,
		MaxPayload:    int32(cfg.MaxPayload),
		NoSigs:        true, // the embedding program owns the signals
		NoLog:         cfg.Logger == nil,
	}
	if len(susers) > 0 {
		opts.Users = susers
	}
	if int64(cfg.MaxPayload) > 64<<20 {
		opts.MaxPending = int64(cfg.MaxPayload)
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		s.removeDir()
		return nil, fmt.Errorf("transport: start NATS server on %s: %w", net.JoinHostPort(host, strconv.Itoa(cfg.Port)), err)
	}
	s.ns = ns
	adapter := &slogAdapter{log: cfg.Logger}
	if cfg.Logger != nil {
		ns.SetLoggerV2(adapter, cfg.Logger.Enabled(context.Background(), slog.LevelDebug), false, false)
	} else {
		// Keep the last error even when quiet, for StartServer's message.
		ns.SetLoggerV2(adapter, false, false, false)
	}
	ns.Start()
	wait := cfg.ReadyTimeout
	if wait <= 0 {
		wait = 10 * time.Second
	}
	if !waitReady(ns, adapter, wait) {
		ns.Shutdown()
		s.removeDir()
		msg := adapter.lastError()
		if msg == "" {
			msg = "not ready after " + wait.String()
		}
		return nil, fmt.Errorf("transport: start NATS server on %s: %s", net.JoinHostPort(host, strconv.Itoa(cfg.Port)), msg)
	}
	if !ns.JetStreamEnabled() {
		ns.Shutdown()
		s.removeDir()
		return nil, fmt.Errorf("transport: start NATS server on %s: JetStream did not start (store %s): %s", ns.ClientURL(), s.dir, adapter.lastError())
	}
	return s, nil
}

// waitReady waits until ns accepts connections, giving up early when the
// server reported a fatal error (such as a port in use).
func waitReady(ns *server.Server, a *slogAdapter, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		if ns.ReadyForConnections(20 * time.Millisecond) {
			return true
		}
		if a.fatal.Load() || time.Now().After(deadline) {
			return false
		}
	}
}

// ClientURL is the URL clients connect to (nats://host:port, without the
// token).
func (s *Server) ClientURL() string { return s.ns.ClientURL() }

// Port is the port the server listens on.
func (s *Server) Port() int {
	if a, ok := s.ns.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

// JetStreamDir is the directory of the JetStream store.
func (s *Server) JetStreamDir() string { return s.dir }

// Shutdown stops the server (clients see a disconnect) and removes the
// JetStream directory when StartServer made it. Safe to call twice.
func (s *Server) Shutdown() {
	s.once.Do(func() {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
		s.removeDir()
	})
}

// WaitForShutdown blocks until the server has shut down.
func (s *Server) WaitForShutdown() { s.ns.WaitForShutdown() }

func (s *Server) removeDir() {
	if s.ownDir {
		_ = os.RemoveAll(s.dir)
	}
}

// slogAdapter is the nats-server Logger over log/slog. Notices go to debug:
// the server's start-up banner is noise in a training run.
type slogAdapter struct {
	log   *slog.Logger
	mu    sync.Mutex
	err   string // last error or fatal message
	fatal atomic.Bool
}

func (a *slogAdapter) logf(level slog.Level, format string, v []any) {
	if a.log == nil || !a.log.Enabled(context.Background(), level) {
		return
	}
	a.log.Log(context.Background(), level, fmt.Sprintf(format, v...), "component", "nats-server")
}

func (a *slogAdapter) keep(format string, v []any) {
	a.mu.Lock()
	a.err = fmt.Sprintf(format, v...)
	a.mu.Unlock()
}

func (a *slogAdapter) lastError() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

func (a *slogAdapter) Noticef(format string, v ...any) { a.logf(slog.LevelDebug, format, v) }
func (a *slogAdapter) Warnf(format string, v ...any) {
	// Users' passwords are kept in plain text on purpose: random per run
	// and only in memory (RunUsers), or in a users file the operator
	// protects; in-process dials compare them (Server.admits).
	if strings.HasPrefix(format, "Plaintext passwords detected") {
		a.logf(slog.LevelDebug, format, v)
		return
	}
	a.logf(slog.LevelWarn, format, v)
}
func (a *slogAdapter) Fatalf(format string, v ...any) {
	a.keep(format, v)
	a.fatal.Store(true)
	a.logf(slog.LevelError, format, v)
}
func (a *slogAdapter) Errorf(format string, v ...any) {
	a.keep(format, v)
	a.logf(slog.LevelError, format, v)
}
func (a *slogAdapter) Debugf(format string, v ...any) { a.logf(slog.LevelDebug, format, v) }
func (a *slogAdapter) Tracef(format string, v ...any) { a.logf(slog.LevelDebug-4, format, v) }
