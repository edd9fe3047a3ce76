package rl

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/tegrl/tegrl/rl/transport"
)

// RemoteActorConfig configures an actor in its own process (tegrl actor).
// Everything else (the environment, the policy's shape, the run's seed)
// comes from the learner's parameter broadcasts.
type RemoteActorConfig struct {
	RunID string `flag:"run" default:"train" usage:"run id of the learner (tegrl train --run)"`
	Token string `flag:"token" usage:"NATS token"`
	URL   string `flag:"nats" default:"nats://127.0.0.1:4222" usage:"NATS server URL"`
	// User and Password authenticate as a NATS user instead of Token.
	User, Password string
	ID             uint32
	// TrustKey, when set, is the learner's public key: parameters not
	// signed with it are dropped and counted (transport.ActorConfig).
	TrustKey ed25519.PublicKey
	// IdleTimeout stops the actor when the learner broadcast nothing new
	// for this long (0: WaitTimeout).
	IdleTimeout time.Duration `flag:"idle-timeout" default:"5m" usage:"stop when the learner broadcast nothing new for this long (it died without ending the run)"`
	Logger      *slog.Logger
}

// RunRemoteActor connects to NATS, waits for the learner's parameters,
// builds the environment and the policy they describe, and acts until ctx
// ends, the learner ends the run or it goes quiet.
func RunRemoteActor(ctx context.Context, cfg RemoteActorConfig) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = WaitTimeout
	}
	conn, err := transport.Dial(ctx, transport.DialConfig{URL: cfg.URL, Token: cfg.Token, User: cfg.User, Password: cfg.Password,
		RunID: cfg.RunID, Name: fmt.Sprintf("tegrl-actor-%d", cfg.ID), Logger: cfg.Logger})
	if err != nil {
		return fmt.Errorf("actor %d: %w", cfg.ID, err)
	}
	defer conn.Close()
	if cfg.TrustKey == nil {
		cfg.Logger.Warn("actor: no trusted key: parameters are taken without checking their signature", "id", cfg.ID)
	}
	tr, err := transport.NewActor(ctx, conn, transport.ActorConfig{ID: cfg.ID, Logger: cfg.Logger, TrustKey: cfg.TrustKey})
	if err != nil {
		return fmt.Errorf("actor %d: %w", cfg.ID, err)
	}
	defer tr.Close()
	deadline := time.Now().Add(cfg.IdleTimeout)
	var payload []byte
	for k := 1; ; k++ {
		_, p, ok := tr.LatestParams()
		if ok {
			payload = p
			break
		}
		if tr.Ended() {
			cfg.Logger.Info("actor: the learner ended the run before sending parameters", "id", cfg.ID, "run", cfg.RunID)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("actor %d: no parameters from run %q within %v", cfg.ID, cfg.RunID, cfg.IdleTimeout)
		}
		if k%25 == 0 {
			// A broadcast can slip between our subscription reaching the
			// server and our first look at the latest-parameters store: look
			// again every half second rather than wait for the next one.
			fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, _, _ = tr.FetchLatestParams(fctx) // not there yet is no error here
			cancel()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(20 * time.Millisecond):
		}
	}
	acfg, err := actorConfigFromParams(payload)
	if err != nil {
		return fmt.Errorf("actor %d: parameters of run %q: %w", cfg.ID, cfg.RunID, err)
	}
	acfg.ID, acfg.IdleTimeout, acfg.Logger = cfg.ID, cfg.IdleTimeout, cfg.Logger
	a, err := NewActor(acfg, tr)
	if err != nil {
		return err
	}
	cfg.Logger.Info("actor started", "id", cfg.ID, "run", cfg.RunID)
	err = a.Run(ctx)
	st := tr.Stats()
	cfg.Logger.Info("actor stopped", "id", cfg.ID, "learner_ended", tr.Ended(), "segments", st.SegmentsPublished, "publish_errors", st.PublishErrors,
		"params_received", st.ParamsReceived, "params_unsigned", st.ParamsUnsigned, "params_bad_signature", st.ParamsBadSignature,
		"params_errors", st.ParamsErrors, "permission_errors", st.Conn.PermissionErrors)
	return err
}

// actorConfigFromParams reads an actor's configuration from a broadcast's
// metadata.
func actorConfigFromParams(payload []byte) (ActorConfig, error) {
	meta, err := decodeMeta(payload)
	if err != nil {
		return ActorConfig{}, err
	}
	pcfg, err := PolicyMeta(meta)
	if err != nil {
		return ActorConfig{}, err
	}
	var spec EnvSpec
	if err := strictJSON(meta[metaEnv], &spec); err != nil {
		return ActorConfig{}, fmt.Errorf("%s: %w", metaEnv, err)
	}
	var am actorMeta
	if err := strictJSON(meta[metaActor], &am); err != nil {
		return ActorConfig{}, fmt.Errorf("%s: %w", metaActor, err)
	}
	if err := spec.validate(); err != nil {
		return ActorConfig{}, err
	}
	return ActorConfig{Seed: am.Seed, SegmentLen: am.SegmentLen, MaxAhead: am.MaxAhead, Env: spec.Config(), Policy: pcfg}, nil
}

func strictJSON(s string, v any) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
