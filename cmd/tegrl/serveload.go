package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/serve"
)

// serveLoadFlags are the flags of `tegrl serve-load`.
type serveLoadFlags struct {
	url          string
	machines     int
	scheduler    string
	rate         float64
	duration     time.Duration
	clients      int
	hotLoadEvery time.Duration
	hotLoad      []string
	fill         float64
	seed         uint64
	json         bool
}

func init() { addCommand(newServeLoadCmd) }

func newServeLoadCmd(a *app) *cobra.Command {
	f := &serveLoadFlags{}
	cmd := &cobra.Command{
		Use:    "serve-load",
		Hidden: true,
		Short:  "Load-test tegrl serve: decisions at a fixed rate while policies are hot-loaded",
		Long: `serve-load sends POST /v1/decide at --rate per second for --duration from
--clients connections, and uploads the --hot-load policy files in turn every
--hot-load-every to POST /v1/policies. It reports throughput, latency
percentiles, failed requests and hot-load times.

Without --url it starts a service in this process on 127.0.0.1 (a synthetic
cluster of --machines, about --fill of its CPU requested, --scheduler
serving, random tokens for every role) and loads it over loopback; with
--url it loads that service, with the tokens in $TEGRL_READ_TOKEN and
$TEGRL_ADMIN_TOKEN.`,
		Example: `  tegrl serve-load --rate 2000 --duration 20s --hot-load-every 75ms`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServeLoad(cmd.Context(), a, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.url, "url", "", "base URL of the service to load (empty: start one in this process)")
	fl.IntVar(&f.machines, "machines", 1000, "machines of the in-process service's synthetic cluster")
	fl.StringVar(&f.scheduler, "scheduler", "docs/policies/student-gnn.safetensors", "the in-process service's scheduler")
	fl.Float64Var(&f.rate, "rate", 2000, "decisions per second")
	fl.DurationVar(&f.duration, "duration", 20*time.Second, "how long to send decisions")
	fl.IntVar(&f.clients, "clients", 8, "concurrent connections")
	fl.DurationVar(&f.hotLoadEvery, "hot-load-every", 75*time.Millisecond, "interval between policy uploads (0: none)")
	fl.StringSliceVar(&f.hotLoad, "hot-load", []string{"docs/policies/small-gnn.safetensors", "docs/policies/student-gnn.safetensors"},
		"policy files uploaded in turn into arm a")
	fl.Float64Var(&f.fill, "fill", 0.6, "share of the in-process cluster's CPU requested by running jobs")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the in-process cluster and its jobs")
	fl.BoolVar(&f.json, "json", false, "print the report as JSON")
	return cmd
}

func runServeLoad(ctx context.Context, a *app, f *serveLoadFlags) error {
	cfg := serve.LoadConfig{URL: f.url, Rate: f.rate, Duration: f.duration, Clients: f.clients, HotLoadEvery: f.hotLoadEvery,
		HotLoadArm: "a", ReadToken: os.Getenv("TEGRL_READ_TOKEN"), AdminToken: os.Getenv("TEGRL_ADMIN_TOKEN")}
	for _, p := range f.hotLoad {
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("--hot-load: %w", err)
		}
		cfg.Policies = append(cfg.Policies, b)
	}
	if f.url == "" {
		stop, err := startLoadTarget(ctx, a, f, &cfg)
		if err != nil {
			return err
		}
		defer stop()
	}
	rep, err := serve.RunLoad(ctx, cfg)
	if err != nil {
		return err
	}
	if f.json {
		return json.NewEncoder(a.stdout).Encode(rep)
	}
	fmt.Fprintln(a.stdout, rep)
	if rep.FirstFailure != "" {
		fmt.Fprintln(a.stdout, "first failure:", rep.FirstFailure)
	}
	return nil
}

// startLoadTarget starts the in-process service of serve-load on
// 127.0.0.1 and points cfg at it.
func startLoadTarget(ctx context.Context, a *app, f *serveLoadFlags, cfg *serve.LoadConfig) (func(), error) {
	c, err := env.NewSyntheticCluster(f.machines, f.seed)
	if err != nil {
		return nil, err
	}
	cfg.ReadToken, cfg.AdminToken = randomToken(), randomToken()
	svc, err := serve.New(serve.Config{Cluster: c, Seed: f.seed, ReadToken: cfg.ReadToken, WriteToken: randomToken(),
		AdminToken: cfg.AdminToken, Arms: []serve.ArmConfig{{Name: "a", Spec: f.scheduler, Weight: 1}}, Logger: a.log})
	if err != nil {
		return nil, err
	}
	pre, err := serve.PreloadState(c, f.fill, f.seed)
	if err != nil {
		return nil, err
	}
	if _, err := svc.State(pre); err != nil {
		return nil, fmt.Errorf("preload: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Serve(sctx, ln) }()
	cfg.URL = "http://" + ln.Addr().String()
	return func() {
		cancel()
		if err := <-done; err != nil {
			a.log.Warn("serve-load: the service's shutdown", "err", err)
		}
	}, nil
}

func randomToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}
