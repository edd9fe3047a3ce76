package transport

import (
	"context"
	"strings"
	"testing"
)

// TestRunBroker: the URL is told once the server listens, and the broker
// stops when ctx ends.
func TestRunBroker(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var url string
	err := RunBroker(ctx, BrokerConfig{Listen: "127.0.0.1:0", MaxPayload: 1 << 20}, func(u string) { url = u; cancel() })
	if err != nil || !strings.HasPrefix(url, "nats://127.0.0.1:") {
		t.Fatalf("RunBroker: %v, url %q", err, url)
	}
	if err := RunBroker(context.Background(), BrokerConfig{Listen: "nowhere", MaxPayload: 1 << 20}, func(string) { t.Error("told a URL") }); err == nil || !strings.HasPrefix(err.Error(), `--listen "nowhere"`) {
		t.Errorf("bad --listen: %v", err)
	}
}
