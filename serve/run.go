package serve

import (
	"context"
	"fmt"
	"net"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/rl/transport"
)

// Options describe a service the way tegrl serve's flags do: Config's
// plain fields as they are, and the specs and files that BuildConfig
// turns into the rest of it (the cluster, the arms, the tokens, TLS, the
// trusted key). Errors name those flags.
type Options struct {
	Config
	// Listen is the host:port Run listens on.
	Listen string `flag:"listen" default:"127.0.0.1:8080" usage:"host:port to listen on (port 0: a random free port)"`
	// Cluster is the initial cluster's spec (env.ParseClusterSpec), or
	// "none": the first full state update defines it.
	Cluster string
	// Machines is the size of a synthetic Cluster.
	Machines int `flag:"machines" default:"1000" usage:"machines of the synthetic cluster"`
	// Tick is the model's seconds per tick (Config.Sim.Tick).
	Tick float64
	// Scheduler is arm a's scheduler; AB, when set, arm b's, which gets
	// ABShare of the job keys.
	AB        string  `flag:"ab" usage:"arm b's scheduler for A/B tests (empty: one arm)"`
	Scheduler string  `flag:"scheduler" default:"langevin" usage:"arm a's scheduler: a built-in name, a policy file, or hot"`
	ABShare   float64 `flag:"ab-share" default:"0.1" usage:"share of job keys routed to arm b (with --ab)"`
	// Safety is the TEG safety layer, "on" or "off".
	Safety string `flag:"safety" default:"on" usage:"safety layer (memory and rack power barrier) in the model's admission filter: on or off"`
	// Token files of the roles; empty reads $TEGRL_READ_TOKEN,
	// $TEGRL_WRITE_TOKEN, $TEGRL_ADMIN_TOKEN (ReadToken).
	AdminTokenFile string `flag:"admin-token-file" usage:"file holding the admin role's bearer token (default: $TEGRL_ADMIN_TOKEN; neither: policy uploads are disabled)"`
	WriteTokenFile string `flag:"write-token-file" usage:"file holding the write role's bearer token (default: $TEGRL_WRITE_TOKEN; neither: the role is open)"`
	ReadTokenFile  string `flag:"read-token-file" usage:"file holding the read role's bearer token (default: $TEGRL_READ_TOKEN; neither: the role is open)"`
	// NATSTokenFile (default $TEGRL_NATS_TOKEN) or NATSCredentialsFile
	// (NAME:PASSWORD; default the file $TEGRL_NATS_CREDENTIALS names)
	// authenticate the connection of Config.NATS.
	NATSCredentialsFile string `flag:"credentials" usage:"file of the NATS user credentials (NAME:PASSWORD) for --nats, instead of a token (default: the file $TEGRL_NATS_CREDENTIALS names)"`
	NATSTokenFile       string `flag:"nats-token-file" usage:"file holding the NATS token (default: $TEGRL_NATS_TOKEN)"`
	// TrustKeyFile is the learner's public key (default: the file
	// $TEGRL_TRUST_KEY names); see Config.TrustKey.
	TrustKeyFile string `flag:"trust-key" usage:"the learner's public key (tegrl train's DIR/signing.pub): refuse policies without a signature by it (FILE.sig beside a policy file, NAME.sig put into the bucket before NAME, an upload's X-Tegrl-Signature header) (default: the file $TEGRL_TRUST_KEY names)"`
	// TLSCert and TLSKey serve HTTPS; with ClientCA clients must present
	// a certificate it signed (LoadTLS).
	ClientCA string `flag:"client-ca" usage:"PEM CA bundle: with it clients must present a certificate it signed (HTTPS only)"`
	TLSKey   string `flag:"tls-key" usage:"PEM private key of --tls-cert"`
	TLSCert  string `flag:"tls-cert" usage:"PEM certificate to serve HTTPS with (with --tls-key)"`
	// Insecure allows a non-loopback Listen while the read or write role
	// has no token (CheckExposure).
	Insecure bool `flag:"insecure" usage:"allow a non-loopback --listen address while the read or write role has no token"`
	// Attach, when set, runs beside the service once it is built (the
	// Kubernetes cluster sync); Run calls the stop it returns on the way
	// out.
	Attach func(ctx context.Context, s *Service) (stop func(), err error)
}

// BuildConfig checks o and turns it into a Config: the cluster loaded,
// the arms, the tokens, the TLS configuration and the trusted key read.
func (o *Options) BuildConfig() (Config, error) {
	switch {
	case o.Machines <= 0:
		return Config{}, fmt.Errorf("--machines %d: want > 0", o.Machines)
	case !(o.Tick > 0):
		return Config{}, fmt.Errorf("--tick %v: want > 0 seconds", o.Tick)
	case o.AB != "" && !(o.ABShare > 0 && o.ABShare < 1):
		return Config{}, fmt.Errorf("--ab-share %v: want a share in (0, 1)", o.ABShare)
	case o.MaxMachines <= 0:
		return Config{}, fmt.Errorf("--max-machines %d: want > 0", o.MaxMachines)
	}
	safety, err := env.ParseOnOff(o.Safety)
	if err != nil {
		return Config{}, fmt.Errorf("--safety %w", err)
	}
	teg := env.DefaultTEG
	teg.Safety = safety
	cfg := o.Config
	cfg.Sim = env.SimConfig{Seed: o.Seed, Tick: o.Tick, TEG: &teg}
	cfg.Arms = []ArmConfig{{Name: "a", Spec: o.Scheduler, Weight: 1}}
	if o.AB != "" {
		cfg.Arms[0].Weight = 1 - o.ABShare
		cfg.Arms = append(cfg.Arms, ArmConfig{Name: "b", Spec: o.AB, Weight: o.ABShare})
	}
	if err := o.secrets(&cfg); err != nil {
		return cfg, err
	}
	if o.Cluster != "none" {
		spec, err := env.ParseClusterSpec(o.Cluster)
		if err != nil {
			return cfg, fmt.Errorf("--cluster: %w", err)
		}
		spec.Machines, spec.Seed = o.Machines, o.Seed
		if cfg.Cluster, err = spec.Load(); err != nil {
			return cfg, fmt.Errorf("--cluster %s: %w", o.Cluster, err)
		}
	}
	return cfg, nil
}

// secrets reads the tokens, the NATS credentials, the trusted key and the
// TLS files into cfg.
func (o *Options) secrets(cfg *Config) error {
	var err error
	for _, t := range []struct {
		dst             *string
		file, env, flag string
	}{
		{&cfg.ReadToken, o.ReadTokenFile, "TEGRL_READ_TOKEN", "--read-token-file"},
		{&cfg.WriteToken, o.WriteTokenFile, "TEGRL_WRITE_TOKEN", "--write-token-file"},
		{&cfg.AdminToken, o.AdminTokenFile, "TEGRL_ADMIN_TOKEN", "--admin-token-file"},
	} {
		if *t.dst, err = ReadToken(t.file, t.env); err != nil {
			return fmt.Errorf("%s: %w", t.flag, err)
		}
	}
	if cfg.NATS.URL == "" {
		cfg.NATS = NATSConfig{}
	} else if err := o.natsAuth(&cfg.NATS); err != nil {
		return err
	}
	if cfg.TrustKey, err = transport.TrustKeyFrom(o.TrustKeyFile); err != nil {
		return fmt.Errorf("--trust-key: %w", err)
	}
	switch {
	case (o.TLSCert == "") != (o.TLSKey == ""):
		return fmt.Errorf("--tls-cert and --tls-key go together")
	case o.ClientCA != "" && o.TLSCert == "":
		return fmt.Errorf("--client-ca needs --tls-cert and --tls-key")
	case o.TLSCert != "":
		if cfg.TLS, err = LoadTLS(o.TLSCert, o.TLSKey, o.ClientCA); err != nil {
			return err
		}
	}
	return nil
}

// natsAuth reads the NATS token and user credentials into nc.
func (o *Options) natsAuth(nc *NATSConfig) error {
	var err error
	if nc.Token, err = ReadToken(o.NATSTokenFile, "TEGRL_NATS_TOKEN"); err != nil {
		return fmt.Errorf("--nats-token-file: %w", err)
	}
	if nc.User, nc.Password, err = transport.CredentialsFrom(o.NATSCredentialsFile); err != nil {
		return fmt.Errorf("--credentials: %w", err)
	}
	if nc.Token != "" && nc.User != "" {
		return fmt.Errorf("--credentials and a NATS token (--nats-token-file, $TEGRL_NATS_TOKEN): give one")
	}
	return nil
}

// Run builds the service of o, listens on o.Listen and serves until ctx
// ends (Service.Serve); ready, when not nil, receives the service's URL
// once it listens. It refuses an exposed Listen without tokens
// (CheckExposure).
func Run(ctx context.Context, o Options, ready func(url string)) error {
	cfg, err := o.BuildConfig()
	if err != nil {
		return err
	}
	if err := CheckExposure(o.Listen, &cfg, o.Insecure); err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	svc, err := New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.Listen, err)
	}
	if cfg.AdminToken == "" {
		svc.log.Info("serve: no admin token: POST /v1/policies is disabled")
	}
	if o.Attach != nil {
		stop, err := o.Attach(ctx, svc)
		if err != nil {
			ln.Close()
			return err
		}
		defer stop()
	}
	scheme := "http"
	if cfg.TLS != nil {
		scheme = "https"
	}
	if ready != nil {
		ready(fmt.Sprintf("%s://%s", scheme, ln.Addr()))
	}
	return svc.Serve(ctx, ln)
}
