package main

import (
	"crypto/ed25519"
	"fmt"

	"github.com/tegrl/tegrl/rl/transport"
)

// runSigningKey is transport.RunSigningKey: the learner's signing key of a
// run writing to out.
func runSigningKey(out string, seed uint64, fromSeed, resume bool) (ed25519.PrivateKey, string, error) {
	return transport.RunSigningKey(out, seed, fromSeed, resume)
}

// writeSignedPolicy is transport.WriteSignedPolicy.
func writeSignedPolicy(path string, payload []byte, key ed25519.PrivateKey) error {
	return transport.WriteSignedPolicy(path, payload, key)
}

// credentialsFrom reads --credentials (default: the file
// $TEGRL_NATS_CREDENTIALS names).
func credentialsFrom(path string) (user, password string, err error) {
	if user, password, err = transport.CredentialsFrom(path); err != nil {
		return "", "", fmt.Errorf("--credentials: %w", err)
	}
	return user, password, nil
}

// trustKeyFrom reads --trust-key (default: the file $TEGRL_TRUST_KEY
// names).
func trustKeyFrom(path string) (ed25519.PublicKey, error) {
	k, err := transport.TrustKeyFrom(path)
	if err != nil {
		return nil, fmt.Errorf("--trust-key: %w", err)
	}
	return k, nil
}
