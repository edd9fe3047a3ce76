package rl

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tegrl/tegrl/rl/transport"
)

// TrainConfig configures a training run: the learner, its actors and the
// transport between them.
type TrainConfig struct {
	RunID string `json:"run_id"`
	Seed  uint64 `json:"seed"`
	// Actors run in this process (0: remote actors only, such as tegrl actor).
	Actors     int `json:"actors"`
	SegmentLen int `json:"segment_len"`
	BatchSize  int `json:"batch_size"`  // decisions per update
	TotalSteps int `json:"total_steps"` // decisions to learn from
	// Sync makes actors wait for each update's parameters (on-policy; with
	// one in-process actor the run is deterministic and resumable). Off,
	// actors never wait and V-trace corrects their lag (IMPALA).
	Sync   bool   `json:"sync"`
	MaxLag uint64 `json:"max_lag"` // segments older than this many versions are dropped

	PPO    Config       `json:"ppo"`
	Policy PolicyConfig `json:"policy"`
	Env    EnvSpec      `json:"env"`

	// Transport: "nats" (default) or "chan" (in-process channels, for
	// comparison). NATSURL "" starts an embedded server on a random
	// loopback port.
	Transport string `json:"transport"`
	NATSURL   string `json:"-"`
	Token     string `json:"-"`
	// User and Password authenticate the learner to an external server
	// (NATSURL) instead of Token. The embedded server without a Token gets
	// a learner and an actor user with random passwords for this run
	// (transport.RunUsers), so in-process actors cannot publish parameters.
	User     string `json:"-"`
	Password string `json:"-"`
	// SigningKey, when set, signs every parameter broadcast; in-process
	// actors verify with its public key and drop anything else. Its public
	// key goes into the checkpoints' metadata (MetaSigningKey).
	SigningKey ed25519.PrivateKey `json:"-"`

	// CheckpointDir receives a checkpoint every CheckpointEvery updates
	// and after the last one; Resume continues from a checkpoint directory
	// (with one in-process actor in sync mode, exactly as the run that
	// wrote it would have gone on).
	CheckpointDir   string `json:"-"`
	CheckpointEvery int    `json:"-"`
	Resume          string `json:"-"`
	// Init, when set, holds a policy's safetensors bytes (same shape) to
	// start from instead of a fresh initialisation: offline pre-training
	// followed by online PPO.
	Init []byte `json:"-"`

	Logger   *slog.Logger      `json:"-"`
	Progress func(l UpdateLog) `json:"-"`
}

// defaults fills the fields left zero (run id, segment length, batch size,
// transport, logger) and checks the rest.
func (c *TrainConfig) defaults() error {
	if c.RunID == "" {
		c.RunID = "run"
	}
	if err := transport.ValidateRunID(c.RunID); err != nil {
		return err
	}
	if c.SegmentLen <= 0 {
		c.SegmentLen = DefaultSegmentLen
	}
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Transport == "" {
		c.Transport = "nats"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	switch {
	case c.Actors < 0:
		return fmt.Errorf("train: %d actors", c.Actors)
	case c.TotalSteps < c.BatchSize:
		return fmt.Errorf("train: total steps %d below one batch (%d)", c.TotalSteps, c.BatchSize)
	case c.Transport != "nats" && c.Transport != "chan":
		return fmt.Errorf("train: transport %q, want nats or chan", c.Transport)
	case c.Sync && c.Actors > 0 && c.BatchSize%(c.SegmentLen*c.Actors) != 0:
		return fmt.Errorf("train: in sync mode the batch (%d) must be a multiple of segment length × actors (%d × %d)", c.BatchSize, c.SegmentLen, c.Actors)
	}
	return nil
}

// Updates is the number of updates the run makes.
func (c *TrainConfig) Updates() int { return c.TotalSteps / c.BatchSize }

// ActorConfig returns the configuration of in-process or remote actor id.
func (c *TrainConfig) ActorConfig(id uint32) ActorConfig {
	a := ActorConfig{ID: id, Seed: c.Seed, SegmentLen: c.SegmentLen, Env: c.Env.Config(), Policy: c.Policy, Logger: c.Logger}
	if c.Sync && c.Actors > 0 {
		a.SyncSegments = c.BatchSize / (c.SegmentLen * c.Actors)
	}
	a.MaxAhead = c.maxAhead()
	return a
}

// maxAhead is the asynchronous actors' ActorConfig.MaxAhead (0 for
// in-process actors in sync mode): two batches' worth per version among
// the in-process actors, so that they fill the batch the learner collects
// while it updates on the last one (acting and learning overlap) without
// making decisions that the learner's queue would only drop. Remote
// actors (Actors 0: their number is not known) get two batches each. An
// actor that waits longer than aheadWait publishes as many more, so
// actors that die cannot starve the learner.
func (c *TrainConfig) maxAhead() int {
	if c.Sync && c.Actors > 0 {
		return 0
	}
	segs := 2 * ((c.BatchSize + c.SegmentLen - 1) / c.SegmentLen)
	if c.Actors > 1 {
		segs = (segs + c.Actors - 1) / c.Actors
	}
	return segs
}

// TrainResult is what a run leaves.
type TrainResult struct {
	Learner *Learner
	Log     []UpdateLog
	Stats   transport.LearnerStats
	Actors  []transport.ActorStats
}

// Train runs the learner and cfg.Actors in-process actors until
// TotalSteps decisions have been learned from. Transport is NATS (an
// embedded server unless NATSURL is set) or in-process channels.
func Train(ctx context.Context, cfg TrainConfig) (*TrainResult, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A queue of two batches: actors faster than the learner then lose
	// segments at the door (counted) instead of filling a deep queue whose
	// tail is stale by the time the learner reads it.
	lcfg := transport.LearnerConfig{QueueSize: 2*cfg.BatchSize/cfg.SegmentLen + 8, MaxLag: cfg.MaxLag, Logger: cfg.Logger, SigningKey: cfg.SigningKey}
	ts, err := openTransport(ctx, transportOptions{Kind: cfg.Transport, URL: cfg.NATSURL, Token: cfg.Token, User: cfg.User, Password: cfg.Password,
		RunID: cfg.RunID, Logger: cfg.Logger, SigningKey: cfg.SigningKey, Learner: lcfg})
	if err != nil {
		return nil, err
	}
	defer ts.close()
	ltr, newActor := ts.learner, ts.newActor
	l, err := NewLearner(cfg, ltr)
	if err != nil {
		return nil, err
	}
	var prior []UpdateLog
	var actorState *ActorState
	if cfg.Resume != "" {
		if prior, actorState, err = LoadCheckpoint(cfg.Resume, l); err != nil {
			return nil, err
		}
		cfg.Logger.Info("resumed", "from", cfg.Resume, "update", l.updates, "version", l.version)
	}
	if err := l.Broadcast(); err != nil {
		return nil, err
	}
	res, err := runLearner(ctx, l, cfg, newActor, prior, actorState)
	if res != nil {
		res.Stats = ltr.Stats()
	}
	if e, ok := ltr.(interface{ End() error }); ok && err == nil {
		// Finished (not stopped to be resumed): the remote actors stop.
		if endErr := e.End(); endErr != nil {
			cfg.Logger.Warn("telling the actors the run ended failed: they stop at their idle timeout", "err", endErr)
		}
	}
	return res, err
}

// runLearner starts the in-process actors and runs the updates.
func runLearner(ctx context.Context, l *Learner, cfg TrainConfig, newActor func(uint32) (transport.ActorTransport, error),
	prior []UpdateLog, actorState *ActorState) (*TrainResult, error) {
	actx, stopActors := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, cfg.Actors)
	var actorTr []transport.ActorTransport
	var actors []*Actor
	for i := 0; i < cfg.Actors; i++ {
		tr, err := newActor(uint32(i + 1))
		if err != nil {
			stopActors()
			wg.Wait()
			return nil, fmt.Errorf("train: actor %d: %w", i+1, err)
		}
		actorTr = append(actorTr, tr)
		a, err := NewActor(cfg.ActorConfig(uint32(i+1)), tr)
		if err != nil {
			stopActors()
			wg.Wait()
			return nil, err
		}
		if actorState != nil {
			a.Restore(actorState)
		}
		actors = append(actors, a)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := a.Run(actx); err != nil {
				errs <- fmt.Errorf("actor %d: %w", a.cfg.ID, err)
			}
		}()
	}
	res := &TrainResult{Learner: l, Log: prior}
	var err error
	for u := l.updates; u < cfg.Updates(); u++ {
		var log UpdateLog
		log, err = l.Step(ctx, cfg.Updates())
		if err != nil {
			break
		}
		res.Log = append(res.Log, log)
		if cfg.CheckpointDir != "" && cfg.CheckpointEvery > 0 && (l.updates%cfg.CheckpointEvery == 0 || u == cfg.Updates()-1) {
			if err = SaveCheckpoint(cfg.CheckpointDir, l, res.Log, actors); err != nil {
				break
			}
		}
		if err = l.Broadcast(); err != nil {
			break
		}
		if cfg.Progress != nil {
			cfg.Progress(log)
		}
		select {
		case e := <-errs:
			err = e
		default:
		}
		if err != nil {
			break
		}
	}
	stopActors()
	wg.Wait()
	for _, tr := range actorTr {
		res.Actors = append(res.Actors, tr.Stats())
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return res, err
	}
	return res, ctx.Err()
}

// WaitTimeout is how long a stand-alone actor waits for parameters before
// giving up on a learner.
const WaitTimeout = 5 * time.Minute

// transportOptions say how a learner and its in-process actors connect.
type transportOptions struct {
	// Kind is "nats" or "chan" (in-process channels).
	Kind string
	// URL is the NATS server; "" starts an embedded one on a random
	// loopback port, with per-run learner and actor users unless Token
	// is set.
	URL, Token, User, Password string
	RunID                      string
	Logger                     *slog.Logger
	// SigningKey signs the parameter broadcasts; the in-process actors
	// trust only its public key.
	SigningKey ed25519.PrivateKey
	Learner    transport.LearnerConfig
}

// transportSet is a learner's transport and the way to open in-process
// actors' transports on it; close releases everything, actors first.
type transportSet struct {
	learner  transport.LearnerTransport
	newActor func(id uint32) (transport.ActorTransport, error)
	cleanup  []func()
}

func (t *transportSet) close() {
	for i := len(t.cleanup) - 1; i >= 0; i-- {
		t.cleanup[i]()
	}
	t.cleanup = nil
}

// openTransport starts the transport of o: channels, or a NATS connection
// (to an embedded server when o.URL is empty).
func openTransport(ctx context.Context, o transportOptions) (*transportSet, error) {
	ts := &transportSet{}
	var trust ed25519.PublicKey
	if o.SigningKey != nil {
		trust = o.SigningKey.Public().(ed25519.PublicKey)
	}
	switch o.Kind {
	case "chan":
		cl, err := transport.NewChanLearner(o.RunID, o.Learner)
		if err != nil {
			return nil, err
		}
		ts.learner = cl
		ts.newActor = func(id uint32) (transport.ActorTransport, error) { return cl.NewActor(id), nil }
	case "nats":
		url := o.URL
		var embedded *transport.Server
		learnerUser := transport.User{Name: o.User, Password: o.Password}
		actorUser := learnerUser
		if url == "" {
			scfg := transport.ServerConfig{Token: o.Token, MaxPayload: 8 << 20, Logger: o.Logger}
			if o.Token == "" {
				lu, au, err := transport.RunUsers(o.RunID)
				if err != nil {
					return nil, fmt.Errorf("train: embedded NATS server: %w", err)
				}
				scfg.Users, learnerUser, actorUser = []transport.User{lu, au}, lu, au
			}
			srv, err := transport.StartServer(scfg)
			if err != nil {
				return nil, fmt.Errorf("train: embedded NATS server: %w", err)
			}
			ts.cleanup = append(ts.cleanup, srv.Shutdown)
			url, embedded = srv.ClientURL(), srv
			o.Logger.Info("embedded NATS server", "url", url)
		}
		dial := func(name string, u transport.User) (*transport.Conn, error) {
			return transport.Dial(ctx, transport.DialConfig{URL: url, Token: o.Token, User: u.Name, Password: u.Password, Name: name,
				RunID: o.RunID, Logger: o.Logger, InProcess: embedded})
		}
		lc, err := dial("tegrl-learner", learnerUser)
		if err != nil {
			ts.close()
			return nil, fmt.Errorf("train: learner connection: %w", err)
		}
		ts.cleanup = append(ts.cleanup, lc.Close)
		nl, err := transport.NewLearner(lc, o.Learner)
		if err != nil {
			ts.close()
			return nil, err
		}
		ts.learner = nl
		ts.newActor = func(id uint32) (transport.ActorTransport, error) {
			c, err := dial(fmt.Sprintf("tegrl-actor-%d", id), actorUser)
			if err != nil {
				return nil, err
			}
			a, err := transport.NewActor(ctx, c, transport.ActorConfig{ID: id, Logger: o.Logger, TrustKey: trust})
			if err != nil {
				c.Close()
				return nil, err
			}
			// Cleanups run last first: the actor stops its fetcher before
			// its connection closes.
			ts.cleanup = append(ts.cleanup, c.Close, func() { _ = a.Close() })
			return a, nil
		}
	default:
		return nil, fmt.Errorf("train: transport %q, want nats or chan", o.Kind)
	}
	ts.cleanup = append(ts.cleanup, func() { ts.learner.Close() })
	return ts, nil
}
