package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/serve"
	"github.com/tegrl/tegrl/serve/kube"
)

func init() { addCommand(newServeCmd) }

func newServeCmd(a *app) *cobra.Command {
	f := &serve.Options{}
	var kf kube.Flags
	cmd := &cobra.Command{
		Use:     "serve",
		Short:   "Serve scheduling decisions over HTTP: JSON API, Kubernetes scheduler extender, hot-loaded policies, A/B routing",
		Long:    helpText("serve"),
		Example: exampleText("serve"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := kf.Check(cmd.Flags().Changed("cluster"), &f.Cluster); err != nil {
				return err
			}
			f.Logger, f.Attach = a.log, kf.Attach(a.log)
			return serve.Run(cmd.Context(), *f, func(url string) { fmt.Fprintln(a.stdout, url) })
		},
	}
	addServeFlags(cmd.Flags(), f)
	addKubeFlags(cmd.Flags(), &kf)
	return cmd
}

// addServeFlags declares the flags of `tegrl serve` on fl.
func addServeFlags(fl *pflag.FlagSet, f *serve.Options) {
	fl.StringVar(&f.Listen, "listen", "127.0.0.1:8080", "host:port to listen on (port 0: a random free port)")
	fl.StringVar(&f.Cluster, "cluster", "synthetic", "initial "+env.ClusterSpecHelp+"; or none (defined by the first POST /v1/state)")
	fl.IntVar(&f.Machines, "machines", 1000, "machines of the synthetic cluster")
	fl.Uint64Var(&f.Seed, "seed", 1, "seed of the synthetic cluster, the model and the schedulers' random streams")
	fl.Float64Var(&f.Tick, "tick", env.DefaultSimConfig.Tick, "seconds per model tick")
	fl.StringVar(&f.Clock, "clock", serve.ClockRequest, "model time: request (state updates carry time_s) or wall (one tick every --tick seconds)")
	fl.StringVar(&f.Scheduler, "scheduler", "langevin", "arm a's scheduler: a built-in name, a policy file, or hot")
	fl.StringVar(&f.AB, "ab", "", "arm b's scheduler for A/B tests (empty: one arm)")
	fl.Float64Var(&f.ABShare, "ab-share", 0.1, "share of job keys routed to arm b (with --ab)")
	fl.StringVar(&f.ReadTokenFile, "read-token-file", "", "file holding the read role's bearer token (default: $TEGRL_READ_TOKEN; neither: the role is open)")
	fl.StringVar(&f.WriteTokenFile, "write-token-file", "", "file holding the write role's bearer token (default: $TEGRL_WRITE_TOKEN; neither: the role is open)")
	fl.StringVar(&f.AdminTokenFile, "admin-token-file", "", "file holding the admin role's bearer token (default: $TEGRL_ADMIN_TOKEN; neither: policy uploads are disabled)")
	fl.StringVar(&f.TLSCert, "tls-cert", "", "PEM certificate to serve HTTPS with (with --tls-key)")
	fl.StringVar(&f.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	fl.StringVar(&f.ClientCA, "client-ca", "", "PEM CA bundle: with it clients must present a certificate it signed (HTTPS only)")
	fl.BoolVar(&f.Insecure, "insecure", false, "allow a non-loopback --listen address while the read or write role has no token")
	fl.IntVar(&f.MaxMachines, "max-machines", 100_000, "largest cluster a state update may define")
	fl.DurationVar(&f.DecisionTTL, "decision-ttl", 24*time.Hour, "how long after a decision its outcome is accepted")
	fl.StringVar(&f.PolicyDir, "policy-dir", "", "directory watched for new policy files (*.safetensors, optional NAME.sha256)")
	fl.StringVar(&f.PolicyDirArm, "policy-dir-arm", "a", "arm that --policy-dir loads into")
	fl.DurationVar(&f.WatchInterval, "watch-interval", 2*time.Second, "poll interval of --policy-dir")
	fl.StringVar(&f.NATS.URL, "nats", "", "NATS URL to watch a JetStream object store for policy files (with --policy-bucket)")
	fl.StringVar(&f.NATSTokenFile, "nats-token-file", "", "file holding the NATS token (default: $TEGRL_NATS_TOKEN)")
	fl.StringVar(&f.NATSCredentialsFile, "credentials", "", "file of the NATS user credentials (NAME:PASSWORD) for --nats, instead of a token (default: the file $TEGRL_NATS_CREDENTIALS names)")
	fl.StringVar(&f.NATS.Bucket, "policy-bucket", "tegrl-policies", "JetStream object store bucket of policy files (created if missing)")
	fl.StringVar(&f.NATS.Arm, "nats-arm", "a", "arm that the NATS bucket loads into")
	fl.StringVar(&f.TrustKeyFile, "trust-key", "", "the learner's public key (tegrl train's DIR/signing.pub): refuse policies without a signature by it (FILE.sig beside a policy file, NAME.sig put into the bucket before NAME, an upload's X-Tegrl-Signature header) (default: the file $TEGRL_TRUST_KEY names)")
	fl.Int64Var(&f.MaxBodyBytes, "max-body", 32<<20, "largest JSON request body in bytes")
	fl.Int64Var(&f.MaxPolicyBytes, "max-policy-bytes", 256<<20, "largest policy file in bytes")
	fl.DurationVar(&f.RequestTimeout, "request-timeout", 10*time.Second, "bound on one request's handling")
	fl.DurationVar(&f.ShutdownTimeout, "shutdown-timeout", 15*time.Second, "bound on draining in-flight requests at shutdown")
	fl.StringVar(&f.Safety, "safety", "on", "safety layer (memory and rack power barrier) in the model's admission filter: on or off")
}

// addKubeFlags declares the flags of `tegrl serve` that connect it to a
// Kubernetes API server.
func addKubeFlags(fl *pflag.FlagSet, f *kube.Flags) {
	fl.StringVar(&f.Kubeconfig, "kubeconfig", "", `keep the model equal to a Kubernetes cluster (informers on nodes and pods) and bind pods for the extender's bind verb: a kubeconfig path, or "`+kube.InCluster+`" for the pod's service account; the cluster's nodes define the machines (--cluster must stay unset)`)
	fl.DurationVar(&f.Resync, "kube-resync", kube.DefaultResync, "with --kubeconfig: period of the full re-sync of the model from the informers' caches")
	fl.Float32Var(&f.QPS, "kube-qps", kube.DefaultQPS, "with --kubeconfig: requests per second to the API server (each bind is one)")
	fl.IntVar(&f.Burst, "kube-burst", kube.DefaultBurst, "with --kubeconfig: request burst above --kube-qps")
}
