package serve

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"

	"github.com/tegrl/tegrl/rl/transport"
)

// reasonSignature is the refusal reason of a policy whose signature is
// missing or does not verify with the trusted key.
const reasonSignature = "signature"

// checkTrust verifies a candidate policy against the learner's public key
// pub (tegrl train's DIR/signing.pub); nil pub accepts every candidate.
// The signature is the sidecar NAME.sig beside a policy file (sources
// file and dir); sidecar, when not nil, is one that came with the
// candidate from elsewhere (an object store, an upload). A candidate over
// maxBytes is left to validation's size check, unhashed. Errors are
// refusals with reason signature, wrapping transport.ErrUnsigned,
// ErrWrongKey or ErrBadSignature.
func checkTrust(pub ed25519.PublicKey, c candidate, sidecar []byte, maxBytes int64) error {
	if pub == nil || (maxBytes > 0 && int64(len(c.payload)) > maxBytes) {
		return nil
	}
	if sidecar == nil && (c.source == "file" || c.source == "dir") {
		b, err := readSidecar(c.name + transport.PolicySigSuffix)
		if err != nil {
			return &refusal{reasonSignature, err}
		}
		sidecar = b
	}
	if err := transport.VerifyPolicy(pub, c.payload, sidecar); err != nil {
		return &refusal{reasonSignature, err}
	}
	return nil
}

// readSidecar reads a signature sidecar, nil when there is none; it reads
// at most a few kilobytes, so that a huge file named like one costs
// nothing (VerifyPolicy refuses anything that long).
func readSidecar(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("policy signature: %w", err)
	}
	defer f.Close()
	b := make([]byte, 4096)
	n, err := f.Read(b)
	if err != nil && n == 0 {
		return nil, fmt.Errorf("policy signature %s: %w", path, err)
	}
	return b[:n], nil
}
