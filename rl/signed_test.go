package rl

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/tegrl/tegrl/nn"
	"github.com/tegrl/tegrl/rl/transport"
)

// TestTrainSigned: a run whose learner signs its broadcasts, over the
// embedded server with per-run users, learns exactly what an unsigned run
// over channels learns; every broadcast is signed, the in-process actor
// drops none, and the checkpoint names the public key.
func TestTrainSigned(t *testing.T) {
	ref, err := Train(context.Background(), tinyTrain("chan", 1, true))
	if err != nil {
		t.Fatal(err)
	}
	cfg := tinyTrain("nats", 1, true)
	cfg.SigningKey = transport.SigningKeyFromSeed(7)
	cfg.CheckpointDir, cfg.CheckpointEvery = filepath.Join(t.TempDir(), "checkpoint"), 10
	res, err := Train(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, b := stable(ref.Log), stable(res.Log)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("update %d differs signed:\n%+v\n%+v", i, b[i], a[i])
		}
	}
	if res.Stats.ParamsSigned != uint64(len(res.Log))+1 || res.Stats.ParamsSigned != res.Stats.ParamsPublished {
		t.Errorf("learner stats %+v", res.Stats)
	}
	if st := res.Actors[0]; st.ParamsUnsigned+st.ParamsBadSignature+st.ParamsErrors != 0 || st.ParamsReceived == 0 || st.Conn.PermissionErrors != 0 {
		t.Errorf("actor stats %+v", st)
	}
	b2, err := os.ReadFile(filepath.Join(cfg.CheckpointDir, ckptPolicy))
	if err != nil {
		t.Fatal(err)
	}
	f, err := nn.DecodeSafetensors(b2)
	if err != nil {
		t.Fatal(err)
	}
	pub := hex.EncodeToString(cfg.SigningKey.Public().(ed25519.PublicKey))
	if got := f.Metadata[MetaSigningKey]; got != pub {
		t.Errorf("checkpoint's public key %q, want %q", got, pub)
	}
}
