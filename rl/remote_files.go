package rl

import (
	"fmt"

	"github.com/tegrl/tegrl/rl/transport"
)

// ReadFiles sets cfg's NATS user credentials and the learner's trusted
// public key from their files (transport.CredentialsFrom and
// transport.TrustKeyFrom: "" reads the files the environment names, or
// none). Errors name tegrl actor's --credentials and --trust-key.
func (cfg *RemoteActorConfig) ReadFiles(credentials, trustKey string) error {
	var err error
	if cfg.User, cfg.Password, err = transport.CredentialsFrom(credentials); err != nil {
		return fmt.Errorf("--credentials: %w", err)
	}
	if cfg.TrustKey, err = transport.TrustKeyFrom(trustKey); err != nil {
		return fmt.Errorf("--trust-key: %w", err)
	}
	return nil
}
