package report

import (
	"bytes"
	"strings"
	"testing"
)

func TestNewLogger(t *testing.T) {
	var b bytes.Buffer
	log, err := NewLogger(&b, "WARN", "json")
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hidden")
	log.Warn("shown", "k", 1)
	if got := b.String(); strings.Contains(got, "hidden") || !strings.Contains(got, `"msg":"shown","k":1}`) {
		t.Errorf("warn-level JSON log: %q", got)
	}
	b.Reset()
	log, _ = NewLogger(&b, "debug", "text")
	log.Debug("d", "k", "v")
	if got := b.String(); !strings.Contains(got, "level=DEBUG msg=d k=v\n") {
		t.Errorf("debug text log: %q", got)
	}
	if _, err := NewLogger(&b, "loud", "text"); err == nil || err.Error() != `--log-level "loud": want debug, info, warn or error` {
		t.Errorf("bad level: %v", err)
	}
	if _, err := NewLogger(&b, "info", "xml"); err == nil || err.Error() != `--log-format "xml": want text or json` {
		t.Errorf("bad format: %v", err)
	}
}
