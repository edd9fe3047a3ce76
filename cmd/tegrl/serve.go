package main

import (
	"fmt"
	"net"
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
	readTokenFile   string
	writeTokenFile  string
	adminTokenFile  string
	natsTokenFile   string
	trustKey        string
	tlsCert         string
	tlsKey          string
	clientCA        string
	insecure        bool
	maxMachines     int
	decisionTTL     time.Duration
	policyDir       string
	policyDirArm    string
	watchInterval   time.Duration
	natsURL         string
	natsBucket      string
	natsArm         string
	maxBody         int64
	maxPolicy       int64
	requestTimeout  time.Duration
	shutdownTimeout time.Duration
	safety          string
	kube            kubeFlags
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

Access has three roles, each with its own bearer token, read from a file
(--read-token-file, ...) or the environment (TEGRL_READ_TOKEN,
TEGRL_WRITE_TOKEN, TEGRL_ADMIN_TOKEN), never from the command line: read
(decide, filter, prioritize), write (state, outcome; also read) and admin
(policy uploads, the A/B and policy views; everything). A role without a
token is open; the admin role is then disabled. serve refuses to listen on
an address other than loopback while the read or write role is open,
unless --insecure. --tls-cert and --tls-key serve HTTPS; with --client-ca
clients must present a certificate it signed.

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
		Example: `  tegrl serve --cluster alibaba-gpu --scheduler langevin
  tegrl serve --cluster none --scheduler out/policy.safetensors --ab langevin --ab-share 0.1
  TEGRL_ADMIN_TOKEN=$(cat /etc/tegrl/admin.token) tegrl serve --scheduler hot --policy-dir /var/lib/tegrl/policies
  tegrl serve --listen 0.0.0.0:8443 --read-token-file /etc/tegrl/read.token --write-token-file /etc/tegrl/write.token --tls-cert tls.crt --tls-key tls.key
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
	fl.StringVar(&f.readTokenFile, "read-token-file", "", "file holding the read role's bearer token (default: $TEGRL_READ_TOKEN; neither: the role is open)")
	fl.StringVar(&f.writeTokenFile, "write-token-file", "", "file holding the write role's bearer token (default: $TEGRL_WRITE_TOKEN; neither: the role is open)")
	fl.StringVar(&f.adminTokenFile, "admin-token-file", "", "file holding the admin role's bearer token (default: $TEGRL_ADMIN_TOKEN; neither: policy uploads are disabled)")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "PEM certificate to serve HTTPS with (with --tls-key)")
	fl.StringVar(&f.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fl.StringVar(&f.clientCA, "client-ca", "", "PEM CA bundle: with it clients must present a certificate it signed (HTTPS only)")
	fl.BoolVar(&f.insecure, "insecure", false, "allow a non-loopback --listen address while the read or write role has no token")
	fl.IntVar(&f.maxMachines, "max-machines", 100_000, "largest cluster a state update may define")
	fl.DurationVar(&f.decisionTTL, "decision-ttl", 24*time.Hour, "how long after a decision its outcome is accepted")
	fl.StringVar(&f.policyDir, "policy-dir", "", "directory watched for new policy files (*.safetensors, optional NAME.sha256)")
	fl.StringVar(&f.policyDirArm, "policy-dir-arm", "a", "arm that --policy-dir loads into")
	fl.DurationVar(&f.watchInterval, "watch-interval", 2*time.Second, "poll interval of --policy-dir")
	fl.StringVar(&f.natsURL, "nats", "", "NATS URL to watch a JetStream object store for policy files (with --policy-bucket)")
	fl.StringVar(&f.natsTokenFile, "nats-token-file", "", "file holding the NATS token (default: $TEGRL_NATS_TOKEN)")
	fl.StringVar(&f.natsBucket, "policy-bucket", "tegrl-policies", "JetStream object store bucket of policy files (created if missing)")
	fl.StringVar(&f.natsArm, "nats-arm", "a", "arm that the NATS bucket loads into")
	fl.StringVar(&f.trustKey, "trust-key", "", "the learner's public key (tegrl train's DIR/signing.pub): refuse policies without a signature by it (FILE.sig beside a policy file) (default: the file $TEGRL_TRUST_KEY names)")
	fl.Int64Var(&f.maxBody, "max-body", 32<<20, "largest JSON request body in bytes")
	fl.Int64Var(&f.maxPolicy, "max-policy-bytes", 256<<20, "largest policy file in bytes")
	fl.DurationVar(&f.requestTimeout, "request-timeout", 10*time.Second, "bound on one request's handling")
	fl.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 15*time.Second, "bound on draining in-flight requests at shutdown")
	fl.StringVar(&f.safety, "safety", "on", "safety layer (memory and rack power barrier) in the model's admission filter: on or off")
	addKubeFlags(fl, &f.kube)
	return cmd
}

func runServe(cmd *cobra.Command, a *app, f *serveFlags) error {
	if err := kubeCluster(cmd, &f.kube, &f.cluster); err != nil {
		return err
	}
	cfg, err := serveConfig(a, f)
	if err != nil {
		return err
	}
	if err := serve.CheckExposure(f.listen, &cfg, f.insecure); err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	svc, err := serve.New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", f.listen, err)
	}
	if cfg.AdminToken == "" {
		a.log.Info("serve: no admin token: POST /v1/policies is disabled")
	}
	scheme := "http"
	if cfg.TLS != nil {
		scheme = "https"
	}
	stopKube, err := startKube(cmd.Context(), a, &f.kube, svc)
	if err != nil {
		ln.Close()
		return err
	}
	defer stopKube()
	fmt.Fprintf(a.stdout, "%s://%s\n", scheme, ln.Addr())
	return svc.Serve(cmd.Context(), ln)
}

// serveConfig turns the flags into the service's configuration.
func serveConfig(a *app, f *serveFlags) (serve.Config, error) {
	switch {
	case f.machines <= 0:
		return serve.Config{}, fmt.Errorf("--machines %d: want > 0", f.machines)
	case !(f.tick > 0):
		return serve.Config{}, fmt.Errorf("--tick %v: want > 0 seconds", f.tick)
	case f.ab != "" && !(f.abShare > 0 && f.abShare < 1):
		return serve.Config{}, fmt.Errorf("--ab-share %v: want a share in (0, 1)", f.abShare)
	case f.maxMachines <= 0:
		return serve.Config{}, fmt.Errorf("--max-machines %d: want > 0", f.maxMachines)
	}
	safety, err := env.ParseOnOff(f.safety)
	if err != nil {
		return serve.Config{}, fmt.Errorf("--safety %w", err)
	}
	teg := env.DefaultTEG
	teg.Safety = safety
	cfg := serve.Config{
		Sim:             env.SimConfig{Seed: f.seed, Tick: f.tick, TEG: &teg},
		Arms:            []serve.ArmConfig{{Name: "a", Spec: f.scheduler, Weight: 1}},
		MaxBodyBytes:    f.maxBody,
		MaxPolicyBytes:  f.maxPolicy,
		MaxMachines:     f.maxMachines,
		DecisionTTL:     f.decisionTTL,
		RequestTimeout:  f.requestTimeout,
		ShutdownTimeout: f.shutdownTimeout,
		Clock:           f.clock,
		Seed:            f.seed,
		PolicyDir:       f.policyDir,
		PolicyDirArm:    f.policyDirArm,
		WatchInterval:   f.watchInterval,
		Logger:          a.log,
	}
	if err := serveSecrets(f, &cfg); err != nil {
		return cfg, err
	}
	key, err := trustKeyFrom(f.trustKey)
	if err != nil {
		return cfg, err
	}
	cfg.TrustKey = key
	if f.ab != "" {
		cfg.Arms[0].Weight = 1 - f.abShare
		cfg.Arms = append(cfg.Arms, serve.ArmConfig{Name: "b", Spec: f.ab, Weight: f.abShare})
	}
	if f.cluster != "none" {
		spec, err := env.ParseClusterSpec(f.cluster)
		if err != nil {
			return cfg, fmt.Errorf("--cluster: %w", err)
		}
		spec.Machines, spec.Seed = f.machines, f.seed
		c, err := spec.Load()
		if err != nil {
			return cfg, fmt.Errorf("--cluster %s: %w", f.cluster, err)
		}
		cfg.Cluster = c
	}
	return cfg, nil
}

// serveSecrets reads the tokens and the TLS files into cfg.
func serveSecrets(f *serveFlags, cfg *serve.Config) error {
	var err error
	for _, t := range []struct {
		dst        *string
		file, env  string
		flag, role string
	}{
		{&cfg.ReadToken, f.readTokenFile, "TEGRL_READ_TOKEN", "--read-token-file", "read"},
		{&cfg.WriteToken, f.writeTokenFile, "TEGRL_WRITE_TOKEN", "--write-token-file", "write"},
		{&cfg.AdminToken, f.adminTokenFile, "TEGRL_ADMIN_TOKEN", "--admin-token-file", "admin"},
	} {
		if *t.dst, err = serve.ReadToken(t.file, t.env); err != nil {
			return fmt.Errorf("%s: %w", t.flag, err)
		}
	}
	if f.natsURL != "" {
		tok, err := serve.ReadToken(f.natsTokenFile, "TEGRL_NATS_TOKEN")
		if err != nil {
			return fmt.Errorf("--nats-token-file: %w", err)
		}
		cfg.NATS = serve.NATSConfig{URL: f.natsURL, Token: tok, Bucket: f.natsBucket, Arm: f.natsArm}
	}
	switch {
	case (f.tlsCert == "") != (f.tlsKey == ""):
		return fmt.Errorf("--tls-cert and --tls-key go together")
	case f.clientCA != "" && f.tlsCert == "":
		return fmt.Errorf("--client-ca needs --tls-cert and --tls-key")
	case f.tlsCert != "":
		if cfg.TLS, err = serve.LoadTLS(f.tlsCert, f.tlsKey, f.clientCA); err != nil {
			return err
		}
	}
	return nil
}
