package distill

import (
	"context"
	"fmt"
	"sync"

	"github.com/tegrl/tegrl/rl"
	"github.com/tegrl/tegrl/rl/transport"
)

// OnlineConfig configures online distillation: the student acts (an
// rl.Actor with the student's parameters) and publishes its decisions over
// the transport; the distiller labels them with the teacher, takes a
// training pass and broadcasts the student's new parameters (DAgger-style:
// the student learns on the states it visits itself).
type OnlineConfig struct {
	Config
	Env        rl.EnvSpec
	Rounds     int // label-and-train rounds
	Decisions  int // decisions per round (a multiple of SegmentLen)
	SegmentLen int
	RunID      string
	// Transport: "chan" (in-process) or a NATS URL ("" starts an embedded
	// server).
	NATSURL string
	UseNATS bool
}

// Online distils teacher into a student that learns on its own states.
func Online(ctx context.Context, teacher *rl.Policy, cfg OnlineConfig) (*rl.Policy, []Stats, error) {
	if cfg.Rounds < 1 || cfg.SegmentLen < 1 || cfg.Decisions < cfg.SegmentLen {
		return nil, nil, fmt.Errorf("distill online: %d rounds of %d decisions in segments of %d", cfg.Rounds, cfg.Decisions, cfg.SegmentLen)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var lt transport.LearnerTransport
	var at transport.ActorTransport
	if cfg.UseNATS {
		url := cfg.NATSURL
		var embedded *transport.Server
		if url == "" {
			srv, err := transport.StartServer(transport.ServerConfig{MaxPayload: 8 << 20})
			if err != nil {
				return nil, nil, err
			}
			defer srv.Shutdown()
			url, embedded = srv.ClientURL(), srv
		}
		lc, err := transport.Dial(ctx, transport.DialConfig{URL: url, RunID: cfg.RunID, Name: "tegrl-distill", InProcess: embedded})
		if err != nil {
			return nil, nil, err
		}
		defer lc.Close()
		l, err := transport.NewLearner(lc, transport.LearnerConfig{QueueSize: 2*cfg.Decisions/cfg.SegmentLen + 8, MaxLag: 1})
		if err != nil {
			return nil, nil, err
		}
		defer l.Close()
		ac, err := transport.Dial(ctx, transport.DialConfig{URL: url, RunID: cfg.RunID, Name: "tegrl-distill-actor", InProcess: embedded})
		if err != nil {
			return nil, nil, err
		}
		defer ac.Close()
		lt = l
		if at, err = transport.NewActor(ctx, ac, transport.ActorConfig{ID: 1}); err != nil {
			return nil, nil, err
		}
	} else {
		cl, err := transport.NewChanLearner(cfg.RunID, transport.LearnerConfig{QueueSize: 2*cfg.Decisions/cfg.SegmentLen + 8, MaxLag: 1})
		if err != nil {
			return nil, nil, err
		}
		defer cl.Close()
		lt, at = cl, cl.NewActor(1)
	}
	// The visited states, labelled by the teacher: with graph rows when
	// either network needs them.
	var all rl.Samples
	all.Configure(cfg.Student)
	all.WithGraph = all.WithGraph || teacher.Cfg.Encoder == rl.EncoderGNN
	student, err := rl.NewPolicy(cfg.Student, cfg.Seed)
	if err != nil {
		return nil, nil, err
	}
	publish := func(v uint64) error {
		b, err := student.EncodeParams(nil)
		if err != nil {
			return err
		}
		lt.SetVersion(v)
		return lt.PublishParams(v, b)
	}
	if err := publish(1); err != nil {
		return nil, nil, err
	}
	actor, err := rl.NewActor(rl.ActorConfig{ID: 1, Seed: cfg.Seed, SegmentLen: cfg.SegmentLen,
		SyncSegments: cfg.Decisions / cfg.SegmentLen, Env: cfg.Env.Config(), Policy: cfg.Student, Graph: all.WithGraph}, at)
	if err != nil {
		return nil, nil, err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	var actErr error
	go func() { defer wg.Done(); actErr = actor.Run(ctx) }()
	defer func() { cancel(); wg.Wait() }()

	var seg rl.Segment
	var out []Stats
	for round := 1; round <= cfg.Rounds; round++ {
		for got := 0; got < cfg.Decisions/cfg.SegmentLen; got++ {
			var f transport.Frame
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case f = <-lt.Segments():
			}
			if err := rl.DecodeSegment(f.Payload, &seg, all.K, all.WithGraph); err != nil {
				return nil, nil, fmt.Errorf("distill online: %w", err)
			}
			for i := 0; i < seg.Len(); i++ {
				all.CopyFrom(&seg.Steps, i)
			}
		}
		// Aggregate the visited states (DAgger) and refit from the
		// current student.
		c := cfg.Config
		c.Epochs = max(1, cfg.Epochs/cfg.Rounds)
		st, err := fit(teacher, student, &all, c)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, st[len(st)-1])
		if err := publish(uint64(round + 1)); err != nil {
			return nil, nil, err
		}
	}
	cancel()
	wg.Wait()
	if actErr != nil {
		return nil, nil, actErr
	}
	return student, out, nil
}
