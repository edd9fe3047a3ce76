package rl

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/nn"
)

// Checkpoint files in a checkpoint directory.
const (
	ckptPolicy = "policy.safetensors" // weights and metadata (a loadable policy)
	ckptOptim  = "optim.safetensors"  // Adam's moments
	ckptState  = "state.json"         // counters, generator states, the log, the actor
)

// MetaSigningKey is the checkpoint metadata key of the run's public
// signing key (64 hex digits; transport.ParsePublicKey reads it).
const MetaSigningKey = "tegrl.signing_public_key"

// ActorState is an in-process actor's state at a sync-mode wait: enough to
// rebuild it exactly, by replaying its current episode's actions.
type ActorState struct {
	Episode  uint64      `json:"episode"`
	Seed     uint64      `json:"seed"`
	Actions  []actionRec `json:"actions"`
	RNG      []byte      `json:"rng"`
	Return   float64     `json:"episode_return"`
	EpSteps  int         `json:"episode_steps"`
	Segments uint64      `json:"segments"`
	Steps    uint64      `json:"steps"`
	Version  uint64      `json:"version"`
}

// actionRec is an env.Action in JSON (the damping may be NaN, which JSON
// cannot hold, so the two floats travel as their bits).
type actionRec struct {
	Node, GPU, Replica int32
	Aff, Damp          uint32
}

func recAction(a env.Action) actionRec {
	return actionRec{Node: int32(a.Node), GPU: int32(a.GPU), Replica: int32(a.ReplicaDelta),
		Aff: math.Float32bits(a.Affinity), Damp: math.Float32bits(a.Damping)}
}

func (r actionRec) action() env.Action {
	return env.Action{Node: int(r.Node), GPU: int(r.GPU), ReplicaDelta: int(r.Replica),
		Affinity: math.Float32frombits(r.Aff), Damping: math.Float32frombits(r.Damp)}
}

// snapshot records the actor's state for a checkpoint taken while it waits.
func (a *Actor) snapshot() {
	rng, err := a.src.MarshalBinary()
	if err != nil {
		panic(err) // PCG's MarshalBinary cannot fail
	}
	st := &ActorState{Episode: a.episode, Seed: a.seed, RNG: rng, Return: a.epRet, EpSteps: a.epSteps,
		Segments: a.segments + 1, Steps: a.Steps, Version: a.version}
	for _, act := range a.actions {
		st.Actions = append(st.Actions, recAction(act))
	}
	a.snapMu.Lock()
	a.snap = st
	a.snapMu.Unlock()
}

// Snapshot returns the state the actor recorded at its last sync wait
// (nil before the first).
func (a *Actor) Snapshot() *ActorState {
	a.snapMu.Lock()
	defer a.snapMu.Unlock()
	return a.snap
}

// Restore makes Run continue from st instead of starting afresh.
func (a *Actor) Restore(st *ActorState) { a.restored = st }

// replay rebuilds the restored episode by re-running its actions (the
// decisions are featurised again, as they were, so the simulator's random
// stream is consumed identically) and returns the decision it stood at.
func (a *Actor) replay(st *ActorState) (Decision, error) {
	if err := a.src.UnmarshalBinary(st.RNG); err != nil {
		return Decision{}, fmt.Errorf("actor state: %w", err)
	}
	a.episode, a.seed, a.segments, a.Steps, a.version = st.Episode, st.Seed, st.Segments, st.Steps, st.Version
	a.lastNewer = timeNow()
	d, err := a.env.Reset(a.seed)
	if err != nil {
		return Decision{}, err
	}
	a.actions, a.epRet, a.epSteps = a.actions[:0], 0, 0
	for k, r := range st.Actions {
		if d.Obs == nil {
			return Decision{}, fmt.Errorf("actor state: the episode ended after %d of %d recorded actions", k, len(st.Actions))
		}
		a.one.Reset()
		a.pol.Featurize(d, &a.one)
		var done bool
		if d, _, done = a.step(r.action()); done {
			return Decision{}, fmt.Errorf("actor state: the episode ended at recorded action %d of %d", k+1, len(st.Actions))
		}
	}
	a.epRet, a.epSteps = st.Return, st.EpSteps // as accumulated, bit for bit
	return d, nil
}

// learnerState is state.json.
type learnerState struct {
	Config      json.RawMessage `json:"config"`
	Version     uint64          `json:"version"`
	Updates     int             `json:"updates"`
	Steps       uint64          `json:"steps"`
	Recent      []float64       `json:"recent_rewards"`
	BadSegments uint64          `json:"bad_segments"`
	PPORNG      []byte          `json:"ppo_rng"`
	AdamSteps   int             `json:"adam_steps"`
	Log         []UpdateLog     `json:"log"`
	Actor       *ActorState     `json:"actor,omitempty"`
}

// configKey is the part of a configuration a resumed run must share with
// the run that wrote the checkpoint.
func configKey(c *TrainConfig) ([]byte, error) {
	k := *c
	k.Transport = "" // NATS or channels: the numbers are the same
	return json.Marshal(k)
}

// SaveCheckpoint writes the learner's state (and, with one in-process sync
// actor, the actor's) to dir, replacing the previous checkpoint atomically.
func SaveCheckpoint(dir string, l *Learner, log []UpdateLog, actors []*Actor) error {
	cfg, err := configKey(&l.Cfg)
	if err != nil {
		return err
	}
	rng, err := l.PPO.RNGState()
	if err != nil {
		return err
	}
	m, v, steps := l.PPO.Optimizer().State()
	st := learnerState{Config: cfg, Version: l.version, Updates: l.updates, Steps: l.steps, Recent: l.recent,
		BadSegments: l.badSegments, PPORNG: rng, AdamSteps: steps, Log: log}
	if len(actors) == 1 && l.Cfg.Sync {
		if st.Actor = actors[0].Snapshot(); st.Actor == nil {
			return fmt.Errorf("checkpoint: the actor has no snapshot")
		}
	}
	meta := map[string]string{metaVersion: strconv.FormatUint(l.version, 10), metaRun: l.Cfg.RunID}
	if k := l.Cfg.SigningKey; k != nil {
		meta[MetaSigningKey] = hex.EncodeToString(k.Public().(ed25519.PublicKey))
	}
	weights, err := l.Pol.EncodeParams(meta)
	if err != nil {
		return err
	}
	moments := nn.NewParams[float32]()
	ps := l.Pol.Params()
	for i := 0; i < ps.Len(); i++ {
		shape := ps.At(i).Shape
		moments.Add("m."+ps.Name(i), nn.NewTensor(m[i], shape...))
		moments.Add("v."+ps.Name(i), nn.NewTensor(v[i], shape...))
	}
	var optim bytes.Buffer
	if err := moments.WriteSafetensors(&optim, nil); err != nil {
		return err
	}
	state, err := json.MarshalIndent(st, "", " ")
	if err != nil {
		return err
	}
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	for name, b := range map[string][]byte{ckptPolicy: weights, ckptOptim: optim.Bytes(), ckptState: state} {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// LoadCheckpoint restores l from dir and returns the log so far and the
// actor's state (nil unless the run had one in-process sync actor).
func LoadCheckpoint(dir string, l *Learner) ([]UpdateLog, *ActorState, error) {
	read := func(name string) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("resume: %w", err)
		}
		return b, nil
	}
	raw, err := read(ckptState)
	if err != nil {
		return nil, nil, err
	}
	var st learnerState
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, nil, fmt.Errorf("resume: %s: %w", filepath.Join(dir, ckptState), err)
	}
	want, err := configKey(&l.Cfg)
	if err != nil {
		return nil, nil, err
	}
	if !bytes.Equal(compactJSON(st.Config), compactJSON(want)) {
		return nil, nil, fmt.Errorf("resume: %s was written by a run with another configuration:\n have %s\n want %s", dir, st.Config, want)
	}
	weights, err := read(ckptPolicy)
	if err != nil {
		return nil, nil, err
	}
	optim, err := read(ckptOptim)
	if err != nil {
		return nil, nil, err
	}
	// Decode everything before touching the learner.
	probe, err := NewPolicy(l.Cfg.Policy, 0)
	if err != nil {
		return nil, nil, err
	}
	if _, err := probe.LoadParams(weights); err != nil {
		return nil, nil, fmt.Errorf("resume: %s: %w", ckptPolicy, err)
	}
	moments := nn.NewParams[float32]()
	ps := l.Pol.Params()
	for i := 0; i < ps.Len(); i++ {
		moments.New("m."+ps.Name(i), ps.At(i).Shape...)
		moments.New("v."+ps.Name(i), ps.At(i).Shape...)
	}
	if _, err := moments.ReadSafetensors(bytes.NewReader(optim)); err != nil {
		return nil, nil, fmt.Errorf("resume: %s: %w", ckptOptim, err)
	}
	if err := l.PPO.SetRNGState(st.PPORNG); err != nil {
		return nil, nil, fmt.Errorf("resume: minibatch generator: %w", err)
	}
	if _, err := l.Pol.LoadParams(weights); err != nil {
		return nil, nil, err
	}
	m, v, _ := l.PPO.Optimizer().State()
	for i := range m {
		copy(m[i], moments.At(2*i).Data)
		copy(v[i], moments.At(2*i+1).Data)
	}
	l.PPO.Optimizer().SetSteps(st.AdamSteps)
	l.version, l.updates, l.steps, l.recent, l.badSegments = st.Version, st.Updates, st.Steps, st.Recent, st.BadSegments
	l.PPO.updates = st.Updates
	return st.Log, st.Actor, nil
}

func compactJSON(b []byte) []byte {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return b
	}
	return out.Bytes()
}
