package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/nn"
	"github.com/tegrl/tegrl/rl"
)

// Policy is one scheduler an arm serves: a built-in by name or a learned
// policy loaded from a policy file.
type Policy struct {
	// Version names it: the built-in's name, or the candidate's name and
	// the first 12 hex digits of its SHA-256 ("policy-v7@1a2b3c4d5e6f").
	Version string
	// Source is builtin, file, dir, nats or admin.
	Source string
	SHA256 string // of the policy file; empty for built-ins
	// Step is the training step from the file's metadata, when given.
	Meta     map[string]string
	LoadedAt time.Time
	// ValidateTime is how long validation took (decode, checks, smoke).
	ValidateTime time.Duration

	sched env.Scheduler
	fit   rl.PolicyFit // of a policy file; zero for built-ins
}

// Refusal reasons of a policy candidate (the reason label of
// tegrl_serve_policy_refused_total).
const (
	reasonChecksum = "checksum" // payload differs from its stated SHA-256
	reasonDecode   = "decode"   // not a safetensors file
	reasonNaN      = "nan"      // NaN or infinite weights
	reasonSchema   = "schema"   // observation schema hash differs
	reasonPolicy   = "policy"   // metadata or weights do not make a policy
	reasonSmoke    = "smoke"    // a canary decision failed
	reasonSize     = "size"     // too large
)

// refusal is a candidate that failed validation.
type refusal struct {
	reason string
	err    error
}

func (r *refusal) Error() string { return r.reason + ": " + r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// metaSchema is the metadata key that holds a policy file's observation
// schema hash (rl's EncodeParams writes it).
const metaSchema = "tegrl.observation_schema_hash"

// candidate is a policy version offered for an arm.
type candidate struct {
	name    string // file or object name
	source  string
	payload []byte
	sha256  string // expected hex SHA-256; empty when the source has none
}

// canary is the fixed set of states on which every candidate must decide
// sensibly before it serves: a small synthetic cluster, partly loaded, and
// pending jobs of every shape.
type canary struct {
	mu   sync.Mutex
	live *env.Live
	jobs []env.Job
}

func newCanary(seed uint64) (*canary, error) {
	c, err := env.NewSyntheticCluster(48, seed)
	if err != nil {
		return nil, fmt.Errorf("canary cluster: %w", err)
	}
	wc := env.DefaultWorkload
	wc.Horizon = 1800
	w, err := env.NewSyntheticWorkload(c, wc, seed)
	if err != nil {
		return nil, fmt.Errorf("canary workload: %w", err)
	}
	l, err := env.NewLive(c, w.Jobs, env.SimConfig{Seed: seed})
	if err != nil {
		return nil, fmt.Errorf("canary model: %w", err)
	}
	// Observe once so the load history records from the start.
	var t env.Tensors
	if err := l.Observe(&t, nil); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x63616e61))
	started := 0
	for k := range w.Jobs {
		j := w.Jobs[k]
		j.Arrival = 0
		req := l.Request(&j)
		i := rng.IntN(len(c.Machines))
		if l.State().Admit(i, &req) {
			if _, err := l.Start(&j, i, -1); err == nil {
				started++
			}
		}
		if started == 60 {
			break
		}
		if k%10 == 9 {
			l.Advance(1)
		}
	}
	l.Advance(env.HistoryLen)
	cv := &canary{live: l}
	svc := env.Job{Name: "canary-service", Kind: env.Service, QoS: env.LatencySensitive, CPU: 4000, Mem: 8192, Duration: 86400, LatencySLO: 60, Service: 0, NetGbps: 0.5}
	cv.jobs = []env.Job{
		{Name: "canary-batch", Kind: env.Batch, QoS: env.BestEffort, CPU: 2000, Mem: 4096, Duration: 600, Service: -1, NetGbps: 0.1},
		{Name: "canary-share", Kind: env.Batch, QoS: env.Burstable, CPU: 4000, Mem: 16384, GPUs: 1, GPUMilli: 500, Duration: 1800, Service: -1},
		{Name: "canary-gang", Kind: env.Training, QoS: env.Guaranteed, CPU: 16000, Mem: 65536, GPUs: 4, GPUMilli: 1000, Duration: 7200, Deadline: 14400, Service: -1, NetGbps: 4},
		svc,
		{Name: "canary-huge", Kind: env.Batch, CPU: 1 << 40, Mem: 1, Duration: 60, Service: -1}, // fits nowhere: must wait
	}
	return cv, nil
}

// probe wraps a learned policy's scheduler during the smoke test and
// records its log-probability and value, which must be finite.
type probe struct {
	p          *rl.Policy
	rng        *rand.Rand
	logp, val  float32
	ok, called bool
}

func (p *probe) Name() string { return "probe" }

func (p *probe) Decide(obs *env.Observation, rng *rand.Rand) env.Action {
	a, logp, val, ok := p.p.Act(rl.Decision{Obs: obs, RNG: rng}, p.rng, true)
	p.logp, p.val, p.ok, p.called = logp, val, ok, true
	if !ok {
		return env.Wait
	}
	return a
}

// smoke runs sched (and the learned policy behind it, if any) on every
// canary job and checks the actions: a machine that admits the job or
// wait, finite knobs in range, finite log-probability and value.
func (cv *canary) smoke(sched env.Scheduler, pol *rl.Policy) (err error) {
	cv.mu.Lock()
	defer cv.mu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic in a canary decision: %v", r)
		}
	}()
	for k := range cv.jobs {
		j := &cv.jobs[k]
		rng := rand.New(rand.NewPCG(uint64(k), 0x736d6f6b))
		a, v, err := cv.live.Decide(j, sched, rng)
		if err != nil {
			return fmt.Errorf("canary %s: %w", j.Name, err)
		}
		if err := checkAction(a, v, len(cv.live.Cluster().Machines)); err != nil {
			return fmt.Errorf("canary %s: %w", j.Name, err)
		}
		if j.Name == "canary-huge" && a.Node >= 0 {
			return fmt.Errorf("canary %s: placed on machine %d a job that fits nowhere", j.Name, a.Node)
		}
		if pol != nil {
			pr := &probe{p: pol, rng: rand.New(rand.NewPCG(uint64(k), 1))}
			if _, _, err := cv.live.Decide(j, pr, rand.New(rand.NewPCG(uint64(k), 0x736d6f6b))); err != nil {
				return fmt.Errorf("canary %s: %w", j.Name, err)
			}
			if pr.ok && (!finite(float64(pr.logp)) || !finite(float64(pr.val))) {
				return fmt.Errorf("canary %s: log-probability %v, value %v", j.Name, pr.logp, pr.val)
			}
		}
	}
	return nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// checkAction checks an action's fields.
func checkAction(a env.Action, v env.Verdict, machines int) error {
	switch {
	case v == env.Invalid:
		return fmt.Errorf("invalid action: machine %d does not admit the job", a.Node)
	case a.Node < -1 || a.Node >= machines:
		return fmt.Errorf("machine %d out of range [-1, %d)", a.Node, machines)
	case a.ReplicaDelta < -5 || a.ReplicaDelta > 5:
		return fmt.Errorf("replica delta %d outside [-5, 5]", a.ReplicaDelta)
	case !(a.Affinity >= 0 && a.Affinity <= 1):
		return fmt.Errorf("affinity %v outside [0, 1]", a.Affinity)
	case math.IsInf(float64(a.Damping), 0) || a.Damping < 0:
		return fmt.Errorf("damping %v must be NaN (leave) or finite and >= 0", a.Damping)
	}
	return nil
}

// versionName is a candidate's version: its name without directories and
// extension, and the first 12 hex digits of its SHA-256.
func versionName(name, sum string) string {
	base := filepath.Base(name)
	base = strings.TrimSuffix(base, ".safetensors")
	if base == "" || base == "." || base == "/" {
		base = "policy"
	}
	return base + "@" + sum[:12]
}

// validate checks a candidate and builds its scheduler; nothing is
// swapped here.
func (cv *canary) validate(c candidate, maxBytes int64) (*Policy, error) {
	start := time.Now()
	if maxBytes > 0 && int64(len(c.payload)) > maxBytes {
		return nil, &refusal{reasonSize, fmt.Errorf("%d bytes, more than the limit of %d", len(c.payload), maxBytes)}
	}
	sum := sha256.Sum256(c.payload)
	got := hex.EncodeToString(sum[:])
	if c.sha256 != "" && !strings.EqualFold(c.sha256, got) {
		return nil, &refusal{reasonChecksum, fmt.Errorf("SHA-256 %s, stated %s", got, c.sha256)}
	}
	f, err := nn.DecodeSafetensors(c.payload)
	if err != nil {
		return nil, &refusal{reasonDecode, err}
	}
	if err := f.CheckFinite(); err != nil {
		return nil, &refusal{reasonNaN, err}
	}
	if h := f.Metadata[metaSchema]; h != env.ObservationSchemaHash() {
		return nil, &refusal{reasonSchema, fmt.Errorf("observation schema hash %q, this build has %q", h, env.ObservationSchemaHash())}
	}
	// Building a policy costs O(hidden³) (orthogonal initialisation)
	// before its weights are read: a file whose metadata claims a width
	// its weights cannot hold is refused first, so that a small file
	// cannot buy minutes of work.
	cfg, err := rl.PolicyMeta(f.Metadata)
	if err != nil {
		return nil, &refusal{reasonPolicy, err}
	}
	// Arms schedule a cluster: a saturation-experiment policy is refused.
	fit := rl.FitOf(cfg, f.Metadata)
	if err := fit.Check(rl.EnvCluster, 0, nil); err != nil {
		return nil, &refusal{reasonPolicy, err}
	}
	weights := 0
	for i := range f.Tensors {
		n := 1
		for _, d := range f.Tensors[i].Shape {
			n *= d
		}
		weights += n
	}
	if cfg.Hidden*cfg.Hidden > weights {
		return nil, &refusal{reasonPolicy, fmt.Errorf("metadata claims hidden width %d, but the file holds only %d weights", cfg.Hidden, weights)}
	}
	pol, meta, err := rl.LoadPolicy(c.payload)
	if err != nil {
		return nil, &refusal{reasonPolicy, err}
	}
	version := versionName(c.name, got)
	sched := rl.NewScheduler(pol, rl.SchedulerConfig{Name: version})
	if err := cv.smoke(sched, pol); err != nil {
		return nil, &refusal{reasonSmoke, err}
	}
	// A fresh instance serves: the smoke test's caches belong to the
	// canary's model.
	pol2, _, err := rl.LoadPolicy(c.payload)
	if err != nil {
		return nil, &refusal{reasonPolicy, err}
	}
	serving := rl.NewScheduler(pol2, rl.SchedulerConfig{Name: version})
	serving.ActionOnly = true // a decision answers with the action alone
	return &Policy{Version: version, Source: c.source, SHA256: got, Meta: meta, LoadedAt: time.Now(),
		ValidateTime: time.Since(start), sched: serving, fit: fit}, nil
}

// builtin validates a built-in scheduler by name.
func (cv *canary) builtin(name string) (*Policy, error) {
	start := time.Now()
	s, err := env.NewScheduler(name)
	if err != nil {
		return nil, err
	}
	if err := cv.smoke(s, nil); err != nil {
		return nil, &refusal{reasonSmoke, err}
	}
	s, _ = env.NewScheduler(name)
	return &Policy{Version: name, Source: "builtin", LoadedAt: time.Now(), ValidateTime: time.Since(start), sched: s}, nil
}

// readPolicyFile reads a policy file, or a directory's policy.safetensors,
// with the SHA-256 of a sidecar file NAME.sha256 when there is one.
func readPolicyFile(spec string) (candidate, error) {
	b, path, err := rl.ReadPolicyFile(spec)
	if err != nil {
		return candidate{}, err
	}
	c := candidate{name: path, source: "file", payload: b}
	if side, err := os.ReadFile(path + ".sha256"); err == nil {
		c.sha256 = firstField(string(side))
	} else if !errors.Is(err, os.ErrNotExist) {
		return candidate{}, err
	}
	return c, nil
}

// firstField is the first whitespace-separated word of s (sha256sum's
// output is "HEX  NAME").
func firstField(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}
