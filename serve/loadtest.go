package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/tegrl/tegrl/env"
)

// LoadTarget is the service LoadTest starts in this process when its
// LoadConfig has no URL: a synthetic cluster of Machines, about Fill of
// its CPU requested by running jobs, Scheduler serving arm a.
type LoadTarget struct {
	Machines  int     `flag:"machines" default:"1000" usage:"machines of the in-process service's synthetic cluster"`
	Scheduler string  `flag:"scheduler" default:"docs/policies/student-gnn.safetensors" usage:"the in-process service's scheduler"`
	Fill      float64 `flag:"fill" default:"0.6" usage:"share of the in-process cluster's CPU requested by running jobs"`
	Seed      uint64  `flag:"seed" default:"1" usage:"seed of the in-process cluster and its jobs"`
	Logger    *slog.Logger
}

// LoadTest is tegrl serve-load: it reads the policy files to hot-load
// into cfg.Policies, starts t on 127.0.0.1 with random tokens for every
// role when cfg.URL is empty (otherwise empty tokens come from
// $TEGRL_READ_TOKEN and $TEGRL_ADMIN_TOKEN), and runs RunLoad.
func LoadTest(ctx context.Context, cfg LoadConfig, policyFiles []string, t LoadTarget) (LoadReport, error) {
	for _, p := range policyFiles {
		b, err := os.ReadFile(p)
		if err != nil {
			return LoadReport{}, fmt.Errorf("--hot-load: %w", err)
		}
		cfg.Policies = append(cfg.Policies, b)
	}
	if cfg.URL != "" {
		if cfg.ReadToken == "" {
			cfg.ReadToken = os.Getenv("TEGRL_READ_TOKEN")
		}
		if cfg.AdminToken == "" {
			cfg.AdminToken = os.Getenv("TEGRL_ADMIN_TOKEN")
		}
		return RunLoad(ctx, cfg)
	}
	stop, err := startLoadTarget(ctx, t, &cfg)
	if err != nil {
		return LoadReport{}, err
	}
	defer stop()
	return RunLoad(ctx, cfg)
}

// startLoadTarget starts t on 127.0.0.1 and points cfg at it.
func startLoadTarget(ctx context.Context, t LoadTarget, cfg *LoadConfig) (func(), error) {
	c, err := env.NewSyntheticCluster(t.Machines, t.Seed)
	if err != nil {
		return nil, err
	}
	cfg.ReadToken, cfg.AdminToken = randomToken(), randomToken()
	svc, err := New(Config{Cluster: c, Seed: t.Seed, ReadToken: cfg.ReadToken, WriteToken: randomToken(),
		AdminToken: cfg.AdminToken, Arms: []ArmConfig{{Name: "a", Spec: t.Scheduler, Weight: 1}}, Logger: t.Logger})
	if err != nil {
		return nil, err
	}
	pre, err := PreloadState(c, t.Fill, t.Seed)
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
			svc.log.Warn("serve-load: the service's shutdown", "err", err)
		}
	}, nil
}

func randomToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}
