package main

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"

	"github.com/tegrl/tegrl/rl/transport"
)

// Environment variables naming the files of tegrl actor's --credentials
// and --trust-key (and tegrl train's --credentials): secrets stay out of
// the command line, where ps shows them.
const (
	envCredentials = "TEGRL_NATS_CREDENTIALS"
	envTrustKey    = "TEGRL_TRUST_KEY"
)

// runSigningKey is the learner's signing key for a run writing to out:
// derived from the seed with fromSeed, the key of the run being resumed
// (out/signing.key) when there is one, a fresh one otherwise. It writes
// out/signing.key (mode 0600) and out/signing.pub and returns the key and
// the public key file's path.
func runSigningKey(out string, seed uint64, fromSeed, resume bool) (ed25519.PrivateKey, string, error) {
	var key ed25519.PrivateKey
	var err error
	switch {
	case fromSeed:
		key = transport.SigningKeyFromSeed(seed)
	case resume:
		if key, err = transport.ReadSigningKey(out); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, "", err
		}
	}
	if key == nil {
		if key, err = transport.NewSigningKey(); err != nil {
			return nil, "", err
		}
	}
	pub, err := transport.WriteSigningKey(out, key)
	return key, pub, err
}

// writeSignedPolicy writes a policy file and, with a key, its signature
// sidecar PATH.sig; the policy's own bytes do not change.
func writeSignedPolicy(path string, payload []byte, key ed25519.PrivateKey) error {
	if err := os.WriteFile(path, payload, 0o644); err != nil {
		return err
	}
	if key == nil {
		return nil
	}
	return os.WriteFile(path+transport.PolicySigSuffix, transport.SignPolicy(key, payload), 0o644)
}

// credentialsFrom reads NATS user credentials from path (NAME:PASSWORD),
// or from the file $TEGRL_NATS_CREDENTIALS names when path is empty; none
// gives empty strings.
func credentialsFrom(path string) (user, password string, err error) {
	if path == "" {
		path = os.Getenv(envCredentials)
	}
	if path == "" {
		return "", "", nil
	}
	user, password, err = transport.ReadCredentials(path)
	if err != nil {
		return "", "", fmt.Errorf("--credentials: %w", err)
	}
	return user, password, nil
}

// trustKeyFrom reads the learner's public key from path, or from the file
// $TEGRL_TRUST_KEY names when path is empty; none gives nil.
func trustKeyFrom(path string) (ed25519.PublicKey, error) {
	if path == "" {
		path = os.Getenv(envTrustKey)
	}
	if path == "" {
		return nil, nil
	}
	k, err := transport.ReadPublicKeyFile(path)
	if err != nil {
		return nil, fmt.Errorf("--trust-key: %w", err)
	}
	return k, nil
}
