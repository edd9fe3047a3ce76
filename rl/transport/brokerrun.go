package transport

import (
	"context"
	"log/slog"
)

// RunBroker starts the broker of cfg (StartBroker), tells listening its
// client URL, and serves until ctx ends; then it shuts the server down.
func RunBroker(ctx context.Context, cfg BrokerConfig, listening func(url string)) error {
	s, err := StartBroker(cfg)
	if err != nil {
		return err
	}
	listening(s.ClientURL())
	<-ctx.Done()
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log.Info("broker: shutting down")
	s.Shutdown()
	return nil
}
