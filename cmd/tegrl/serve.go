package main

import (
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/serve"
)

// serveFlags are the flags of `tegrl serve`.
type serveFlags struct {
	listen          string
	cluster         string
	machines        int
	seed            uint64
	tick            float64
	clock           string
	scheduler       string
	ab              string
	abShare         float64
	adminToken      string
	policyDir       string
	policyDirArm    string
	watchInterval   time.Duration
	natsURL         string
	natsToken       string
	natsBucket      string
	natsArm         string
	maxBody         int64
	maxPolicy       int64
	requestTimeout  time.Duration
	shutdownTimeout time.Duration
	safety          string
}

func init() { addCommand(newServeCmd) }

func newServeCmd(a *app) *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve scheduling decisions over HTTP: JSON API, Kubernetes scheduler extender, hot-loaded policies, A/B routing",
		Long: `serve runs the real-time scheduling service. It keeps a live model of the
cluster, fed by POST /v1/state (machines, jobs started and stopped, usage,
the queue, the clock), and answers POST /v1/decide (a pending job -> machine,
replica delta, affinity, damping, decision id, policy version) with the
scheduler of the job's A/B arm: a built-in scheduler by name or a learned
policy file. kube-scheduler can call it as an extender (POST /filter,
POST /prioritize). GET /metrics serves Prometheus metrics, GET /healthz and
GET /readyz the health and readiness (ready once a cluster is defined and
every arm serves a policy that passed its smoke test).

New policy versions are hot-loaded from --policy-dir, from a NATS JetStream
object store bucket (--nats, --policy-bucket) or by POST /v1/policies with
the admin bearer token; each is validated (checksum, observation schema
hash, finite weights, smoke decisions on canary states) before it replaces
the arm's policy; a refused one is logged and counted and the old one keeps
serving.

It prints the URL on stdout and runs until SIGINT or SIGTERM, then drains
in-flight requests.

Schedulers: ` + fmt.Sprint(env.SchedulerNames) + `, a policy file (.safetensors or a
training output directory), or "hot" (none until one is hot-loaded).`,
		Example: `  tegrl serve --cluster alibaba-gpu:../shared/traces/alibaba-gpu-v2023/nodes.csv --scheduler langevin
  tegrl serve --cluster none --scheduler out/policy.safetensors --ab langevin --ab-share 0.1
  tegrl serve --scheduler hot --policy-dir /var/lib/tegrl/policies --admin-token "$TEGRL_ADMIN_TOKEN"
  tegrl serve --scheduler hot --nats nats://127.0.0.1:4222 --policy-bucket tegrl-policies`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd, a, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:8080", "host:port to listen on (port 0: a random free port)")
	fl.StringVar(&f.cluster, "cluster", "synthetic", "initial cluster: synthetic, alibaba-gpu:PATH, alibaba-2018:PATH, or none (defined by the first POST /v1/state)")
	fl.IntVar(&f.machines, "machines", 1000, "machines of the synthetic cluster")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the synthetic cluster, the model and the schedulers' random streams")
	fl.Float64Var(&f.tick, "tick", env.DefaultSimConfig.Tick, "seconds per model tick")
	fl.StringVar(&f.clock, "clock", serve.ClockRequest, "model time: request (state updates carry time_s) or wall (one tick every --tick seconds)")
	fl.StringVar(&f.scheduler, "scheduler", "langevin", "arm a's scheduler: a built-in name, a policy file, or hot")
	fl.StringVar(&f.ab, "ab", "", "arm b's scheduler for A/B tests (empty: one arm)")
	fl.Float64Var(&f.abShare, "ab-share", 0.1, "share of job keys routed to arm b (with --ab)")
	fl.StringVar(&f.adminToken, "admin-token", os.Getenv("TEGRL_ADMIN_TOKEN"), "bearer token of POST /v1/policies (default $TEGRL_ADMIN_TOKEN; empty disables it)")
	fl.StringVar(&f.policyDir, "policy-dir", "", "directory watched for new policy files (*.safetensors, optional NAME.sha256)")
	fl.StringVar(&f.policyDirArm, "policy-dir-arm", "a", "arm that --policy-dir loads into")
	fl.DurationVar(&f.watchInterval, "watch-interval", 2*time.Second, "poll interval of --policy-dir")
	fl.StringVar(&f.natsURL, "nats", "", "NATS URL to watch a JetStream object store for policy files (with --policy-bucket)")
	fl.StringVar(&f.natsToken, "nats-token", os.Getenv("TEGRL_NATS_TOKEN"), "NATS token (default $TEGRL_NATS_TOKEN)")
	fl.StringVar(&f.natsBucket, "policy-bucket", "tegrl-policies", "JetStream object store bucket of policy files (created if missing)")
	fl.StringVar(&f.natsArm, "nats-arm", "a", "arm that the NATS bucket loads into")
	fl.Int64Var(&f.maxBody, "max-body", 32<<20, "largest JSON request body in bytes")
	fl.Int64Var(&f.maxPolicy, "max-policy-bytes", 256<<20, "largest policy file in bytes")
	fl.DurationVar(&f.requestTimeout, "request-timeout", 10*time.Second, "bound on one request's handling")
	fl.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 15*time.Second, "bound on draining in-flight requests at shutdown")
	fl.StringVar(&f.safety, "safety", "on", "safety layer (memory and rack power barrier) in the model's admission filter: on or off")
	return cmd
}

func runServe(cmd *cobra.Command, a *app, f *serveFlags) error {
	switch {
	case f.machines <= 0:
		return fmt.Errorf("--machines %d: want > 0", f.machines)
	case !(f.tick > 0):
		return fmt.Errorf("--tick %v: want > 0 seconds", f.tick)
	case f.ab != "" && !(f.abShare > 0 && f.abShare < 1):
		return fmt.Errorf("--ab-share %v: want a share in (0, 1)", f.abShare)
	}
	safety, err := env.ParseOnOff(f.safety)
	if err != nil {
		return fmt.Errorf("--safety %w", err)
	}
	teg := env.DefaultTEG
	teg.Safety = safety
	cfg := serve.Config{
		Sim:             env.SimConfig{Seed: f.seed, Tick: f.tick, TEG: &teg},
		Arms:            []serve.ArmConfig{{Name: "a", Spec: f.scheduler, Weight: 1}},
		AdminToken:      f.adminToken,
		MaxBodyBytes:    f.maxBody,
		MaxPolicyBytes:  f.maxPolicy,
		RequestTimeout:  f.requestTimeout,
		ShutdownTimeout: f.shutdownTimeout,
		Clock:           f.clock,
		Seed:            f.seed,
		PolicyDir:       f.policyDir,
		PolicyDirArm:    f.policyDirArm,
		WatchInterval:   f.watchInterval,
		Logger:          a.log,
	}
	if f.ab != "" {
		cfg.Arms[0].Weight = 1 - f.abShare
		cfg.Arms = append(cfg.Arms, serve.ArmConfig{Name: "b", Spec: f.ab, Weight: f.abShare})
	}
	if f.natsURL != "" {
		cfg.NATS = serve.NATSConfig{URL: f.natsURL, Token: f.natsToken, Bucket: f.natsBucket, Arm: f.natsArm}
	}
	if f.cluster != "none" {
		spec, err := env.ParseClusterSpec(f.cluster)
		if err != nil {
			return fmt.Errorf("--cluster: %w", err)
		}
		spec.Machines, spec.Seed = f.machines, f.seed
		c, err := spec.Load()
		if err != nil {
			return fmt.Errorf("--cluster %s: %w", f.cluster, err)
		}
		cfg.Cluster = c
	}
	svc, err := serve.New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", f.listen, err)
	}
	if f.adminToken == "" {
		a.log.Info("serve: no --admin-token: POST /v1/policies is disabled")
	}
	fmt.Fprintf(a.stdout, "http://%s\n", ln.Addr())
	return svc.Serve(cmd.Context(), ln)
}
