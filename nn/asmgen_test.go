package nn

import (
	"bytes"
	"os"
	"testing"

	"github.com/tegrl/tegrl/nn/internal/asmgen/asm"
)

// TestAsmGenerated checks that sgemm_amd64.s is what its generator writes.
func TestAsmGenerated(t *testing.T) {
	have, err := os.ReadFile("sgemm_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	want := asm.Generate()
	if !bytes.Equal(have, want) {
		hl, wl := bytes.Split(have, []byte("\n")), bytes.Split(want, []byte("\n"))
		for i := 0; i < len(hl) || i < len(wl); i++ {
			if i >= len(hl) || i >= len(wl) || !bytes.Equal(hl[i], wl[i]) {
				var h, w []byte
				if i < len(hl) {
					h = hl[i]
				}
				if i < len(wl) {
					w = wl[i]
				}
				t.Fatalf("nn/sgemm_amd64.s is stale: run go generate ./nn (line %d: file %q, generator %q)", i+1, h, w)
			}
		}
	}
}
