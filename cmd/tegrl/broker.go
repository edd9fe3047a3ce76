package main

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/rl/transport"
)

// brokerFlags are the flags of `tegrl broker`.
type brokerFlags struct {
	listen     string
	token      string
	users      string
	store      string
	maxPayload int
}

func init() { addCommand(newBrokerCmd) }

func newBrokerCmd(a *app) *cobra.Command {
	f := &brokerFlags{}
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Run a stand-alone NATS server (with JetStream) for distributed training",
		Long: `broker runs the NATS server that tegrl train otherwise embeds, so that
actors and the learner in many processes, on many machines, can meet: they
point --nats at the URL it prints. JetStream (the object store for large
parameter sets, the key-value of the latest parameters) keeps its files in
--store, so a restarted broker with the same --store still has them.

It prints the client URL on stdout and runs until SIGINT or SIGTERM.`,
		Example: `  tegrl broker --listen 0.0.0.0:4222 --token "$TEGRL_NATS_TOKEN" --store /var/lib/tegrl/nats
  tegrl broker --listen 127.0.0.1:0   # a random free port`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBroker(cmd, a, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:4222", "host:port to listen on (port 0: a random free port)")
	fl.StringVar(&f.token, "token", "", "token every client must present (empty: no authentication)")
	fl.StringVar(&f.users, "users", "", "file of NATS users, one NAME:PASSWORD:ROLE[:RUN] a line (ROLE learner or actor; actors may not publish parameters), instead of --token")
	fl.StringVar(&f.store, "store", "", "JetStream directory (empty: a temporary directory, removed on exit)")
	fl.IntVar(&f.maxPayload, "max-payload", 1<<20, "largest message in bytes (at most 64 MiB); larger parameter sets go through the object store")
	return cmd
}

func runBroker(cmd *cobra.Command, a *app, f *brokerFlags) error {
	host, portStr, err := net.SplitHostPort(f.listen)
	if err != nil {
		return fmt.Errorf("--listen %q: want host:port: %w", f.listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return fmt.Errorf("--listen %q: port %q is not a number in 0..65535", f.listen, portStr)
	}
	if f.maxPayload <= 0 || f.maxPayload > transport.MaxFramePayload {
		return fmt.Errorf("--max-payload %d: want 1..%d bytes", f.maxPayload, transport.MaxFramePayload)
	}
	var users []transport.User
	if f.users != "" {
		b, err := os.ReadFile(f.users)
		if err != nil {
			return fmt.Errorf("--users: %w", err)
		}
		if users, err = transport.ParseUsers(b); err != nil {
			return fmt.Errorf("--users %s: %w", f.users, err)
		}
	}
	if f.token == "" && len(users) == 0 {
		if ip := net.ParseIP(host); host == "" || ip == nil || !ip.IsLoopback() {
			a.log.Warn("broker: no --token and not listening on loopback only: anyone who reaches the port can read and publish", "listen", f.listen)
		}
	}
	if f.store == "" {
		a.log.Info("broker: no --store; JetStream data lives in a temporary directory and is removed on exit")
	}
	s, err := transport.StartServer(transport.ServerConfig{
		Host: host, Port: port, Token: f.token, Users: users, JetStreamDir: f.store, MaxPayload: f.maxPayload, Logger: a.log,
	})
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	fmt.Fprintln(a.stdout, s.ClientURL())
	a.log.Info("broker: NATS server ready", "url", s.ClientURL(), "jetstream_dir", s.JetStreamDir(), "max_payload", f.maxPayload, "auth", f.token != "" || len(users) > 0, "users", len(users))
	<-cmd.Context().Done()
	a.log.Info("broker: shutting down")
	s.Shutdown()
	return nil
}
