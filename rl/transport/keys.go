package transport

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
)

// Key files of a run directory: the learner's private signing key (mode
// 0600) and its public key, which actors (tegrl actor --trust-key) and
// serve (--trust-key) are given.
const (
	SigningKeyFile = "signing.key"
	PublicKeyFile  = "signing.pub"
)

// NewSigningKey returns a fresh ed25519 key from crypto/rand.
func NewSigningKey() (ed25519.PrivateKey, error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("transport: signing key: %w", err)
	}
	return key, nil
}

// SigningKeyFromSeed derives a key from a run's seed, for runs that must be
// reproducible to the signature bytes: anyone who knows the seed can sign
// as this key, so it authenticates nothing against someone who does.
func SigningKeyFromSeed(seed uint64) ed25519.PrivateKey {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	s := sha256.Sum256(append([]byte("tegrl signing key from seed v1\x00"), b[:]...))
	return ed25519.NewKeyFromSeed(s[:])
}

// WriteSigningKey writes dir/signing.key (PKCS #8 PEM, mode 0600) and
// dir/signing.pub (PKIX PEM) and returns the public key file's path.
func WriteSigningKey(dir string, key ed25519.PrivateKey) (string, error) {
	priv, err := MarshalPrivateKey(key)
	if err != nil {
		return "", err
	}
	pub, err := MarshalPublicKey(key.Public().(ed25519.PublicKey))
	if err != nil {
		return "", err
	}
	kp := filepath.Join(dir, SigningKeyFile)
	// Remove first: WriteFile keeps the mode of a file that exists.
	if err := os.Remove(kp); err != nil && !os.IsNotExist(err) {
		return "", fmt.Errorf("transport: signing key: %w", err)
	}
	if err := os.WriteFile(kp, priv, 0o600); err != nil {
		return "", fmt.Errorf("transport: signing key: %w", err)
	}
	pp := filepath.Join(dir, PublicKeyFile)
	if err := os.WriteFile(pp, pub, 0o644); err != nil {
		return "", fmt.Errorf("transport: public key: %w", err)
	}
	return pp, nil
}

// ReadSigningKey reads dir/signing.key.
func ReadSigningKey(dir string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(filepath.Join(dir, SigningKeyFile))
	if err != nil {
		return nil, fmt.Errorf("transport: signing key: %w", err)
	}
	return ParsePrivateKey(b)
}
