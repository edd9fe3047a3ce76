package transport

import (
	"crypto/ed25519"
	"errors"
	"os"
)

// Environment variables naming the files of the --credentials and
// --trust-key flags of tegrl train, actor and serve: secrets stay out of
// the command line, where ps shows them.
const (
	EnvCredentials = "TEGRL_NATS_CREDENTIALS"
	EnvTrustKey    = "TEGRL_TRUST_KEY"
)

// CredentialsFrom reads NATS user credentials from path (NAME:PASSWORD,
// ReadCredentials), or from the file $TEGRL_NATS_CREDENTIALS names when
// path is empty; neither gives empty strings.
func CredentialsFrom(path string) (user, password string, err error) {
	if path == "" {
		path = os.Getenv(EnvCredentials)
	}
	if path == "" {
		return "", "", nil
	}
	return ReadCredentials(path)
}

// TrustKeyFrom reads the learner's public key from path
// (ReadPublicKeyFile), or from the file $TEGRL_TRUST_KEY names when path
// is empty; neither gives nil.
func TrustKeyFrom(path string) (ed25519.PublicKey, error) {
	if path == "" {
		path = os.Getenv(EnvTrustKey)
	}
	if path == "" {
		return nil, nil
	}
	return ReadPublicKeyFile(path)
}

// RunSigningKey is the learner's signing key for a run writing to dir:
// derived from seed when fromSeed (SigningKeyFromSeed), the key of the run
// being resumed (dir/signing.key) when resume and there is one, a fresh
// one otherwise. It writes dir/signing.key (mode 0600) and
// dir/signing.pub and returns the key and the public key file's path.
func RunSigningKey(dir string, seed uint64, fromSeed, resume bool) (ed25519.PrivateKey, string, error) {
	var key ed25519.PrivateKey
	var err error
	switch {
	case fromSeed:
		key = SigningKeyFromSeed(seed)
	case resume:
		if key, err = ReadSigningKey(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, "", err
		}
	}
	if key == nil {
		if key, err = NewSigningKey(); err != nil {
			return nil, "", err
		}
	}
	pub, err := WriteSigningKey(dir, key)
	return key, pub, err
}

// WriteSignedPolicy writes a policy file and, with a key, its signature
// sidecar PATH.sig (SignPolicy); the policy's own bytes do not change.
func WriteSignedPolicy(path string, payload []byte, key ed25519.PrivateKey) error {
	if err := os.WriteFile(path, payload, 0o644); err != nil {
		return err
	}
	if key == nil {
		return nil
	}
	return os.WriteFile(path+PolicySigSuffix, SignPolicy(key, payload), 0o644)
}
