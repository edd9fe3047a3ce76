package transport

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
)

// BrokerConfig describes a stand-alone broker the way tegrl broker's
// flags do; errors name those flags.
type BrokerConfig struct {
	// Listen is host:port (port 0: a random free port).
	Listen string `flag:"listen" default:"127.0.0.1:4222" usage:"host:port to listen on (port 0: a random free port)"`
	// Token every client must present ("": no authentication unless
	// UsersFile).
	Token string `flag:"token" usage:"token every client must present (empty: no authentication)"`
	// UsersFile is a file of users (ParseUsers), instead of Token.
	UsersFile string `flag:"users" usage:"file of NATS users, one NAME:PASSWORD:ROLE[:RUN] a line (ROLE learner or actor; actors may not publish parameters), instead of --token"`
	// Store is the JetStream directory ("": a temporary one, removed by
	// Shutdown).
	Store string `flag:"store" usage:"JetStream directory (empty: a temporary directory, removed on exit)"`
	// MaxPayload is the largest message in bytes, 1..MaxFramePayload.
	MaxPayload int `flag:"max-payload" default:"1048576" usage:"largest message in bytes (at most 64 MiB); larger parameter sets go through the object store"`
	Logger     *slog.Logger
}

// StartBroker checks cfg, reads its users and starts the server. An open
// broker (no token, no users) listening beyond loopback starts, with a
// warning: distributed training on a private network may want it so.
func StartBroker(cfg BrokerConfig) (*Server, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	host, portStr, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: want host:port: %w", cfg.Listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("--listen %q: port %q is not a number in 0..65535", cfg.Listen, portStr)
	}
	if cfg.MaxPayload <= 0 || cfg.MaxPayload > MaxFramePayload {
		return nil, fmt.Errorf("--max-payload %d: want 1..%d bytes", cfg.MaxPayload, MaxFramePayload)
	}
	var users []User
	if cfg.UsersFile != "" {
		b, err := os.ReadFile(cfg.UsersFile)
		if err != nil {
			return nil, fmt.Errorf("--users: %w", err)
		}
		if users, err = ParseUsers(b); err != nil {
			return nil, fmt.Errorf("--users %s: %w", cfg.UsersFile, err)
		}
	}
	if cfg.Token == "" && len(users) == 0 {
		if ip := net.ParseIP(host); host == "" || ip == nil || !ip.IsLoopback() {
			log.Warn("broker: no --token and not listening on loopback only: anyone who reaches the port can read and publish", "listen", cfg.Listen)
		}
	}
	if cfg.Store == "" {
		log.Info("broker: no --store; JetStream data lives in a temporary directory and is removed on exit")
	}
	s, err := StartServer(ServerConfig{
		Host: host, Port: port, Token: cfg.Token, Users: users, JetStreamDir: cfg.Store, MaxPayload: cfg.MaxPayload, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	log.Info("broker: NATS server ready", "url", s.ClientURL(), "jetstream_dir", s.JetStreamDir(), "max_payload", cfg.MaxPayload,
		"auth", cfg.Token != "" || len(users) > 0, "users", len(users))
	return s, nil
}
