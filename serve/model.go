package serve

import (
	"fmt"
	"hash/fnv"
	"math"
	"strconv"

	"github.com/tegrl/tegrl/env"
)

// fieldError is a request that is wrong in one field: 400, with the
// field's path in the message.
type fieldError struct {
	Field string
	Msg   string
}

func (e *fieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &fieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// conflictError is a request that is well formed but cannot apply to the
// service's current state: 409.
type conflictError struct{ msg string }

func (e *conflictError) Error() string { return e.msg }

// defaultDurationS is the expected work of a job whose duration is not
// given: an hour, the order of a typical training or batch job in the
// Alibaba traces.
const defaultDurationS = 3600

// maxNames bounds the distinct service and tenant names a model keeps;
// beyond it, new names share one overflow index (clients cannot grow the
// model without bound).
const maxNames = 1 << 16

// model is the service's view of the cluster: the live simulation plus the
// names the API uses for machines, jobs, services and tenants.
type model struct {
	live     *env.Live
	machines map[string]int
	jobs     map[string]int // job key -> live slot
	keys     map[int]string // live slot -> job key
	services map[string]int
	tenants  map[string]int
	up       int // machines up, kept as they change (a scan at 100k machines costs a millisecond)
}

func newModel(c *env.Cluster, target []env.Job, cfg env.SimConfig) (*model, error) {
	l, err := env.NewLive(c, target, cfg)
	if err != nil {
		return nil, err
	}
	m := &model{live: l, machines: make(map[string]int, len(c.Machines)), jobs: map[string]int{}, keys: map[int]string{},
		services: map[string]int{}, tenants: map[string]int{}, up: len(c.Machines)}
	for i := range c.Machines {
		m.machines[c.Machines[i].Name] = i
	}
	return m, nil
}

// index returns name's dense index in names, adding it (up to maxNames).
func index(names map[string]int, name string) int {
	if k, ok := names[name]; ok {
		return k
	}
	if len(names) >= maxNames {
		return maxNames
	}
	k := len(names)
	names[name] = k
	return k
}

// usageKey is the usage model's hash input for a job key.
func usageKey(key string) int {
	h := fnv.New64a()
	h.Write([]byte(key))
	return int(h.Sum64() & (1<<62 - 1))
}

func finiteNonNeg(x float64) bool { return x >= 0 && !math.IsInf(x, 0) }

// Bounds on the numbers of requests: finite, and small enough that sums
// and products of many of them stay finite.
const (
	// MaxTimeS bounds times and durations in seconds (about 317 years).
	MaxTimeS = 1e10
	// MaxReward bounds the magnitude of an outcome's reward.
	MaxReward = 1e9
	// maxRatio bounds measured usage ratios.
	maxRatio = 1e3
	// maxGbps bounds bandwidths.
	maxGbps = 1e6
	// maxPowerW bounds power figures (a megawatt rack is far beyond any).
	maxPowerW = 1e9
	// maxKeyLen bounds job keys and names.
	maxKeyLen = 1024
	// maxListLen bounds each list of a state update.
	maxListLen = 1 << 20
)

// boundedTime reports whether x is a time in [0, MaxTimeS].
func boundedTime(x float64) bool { return x >= 0 && x <= MaxTimeS }

// stateLimits checks the sizes of a state update before anything else.
func stateLimits(req *StateRequest, maxMachines int) error {
	switch {
	case maxMachines > 0 && len(req.Machines) > maxMachines:
		return fieldErr("machines", "%d machines, more than the limit of %d", len(req.Machines), maxMachines)
	case len(req.Racks) > 0 && len(req.Machines) == 0:
		return fieldErr("racks", "only with machines (a full update)")
	case len(req.Started) > maxListLen || len(req.Stopped) > maxListLen || len(req.Usage) > maxListLen ||
		len(req.MachineStatus) > maxListLen || len(req.Racks) > maxListLen:
		return fieldErr("started", "a list of more than %d entries", maxListLen)
	}
	return nil
}

// applyRacks sets the racks' properties of a full update on c.
func applyRacks(c *env.Cluster, racks []RackJSON) error {
	if len(racks) == 0 {
		return nil
	}
	byName := make(map[string]int, len(c.Racks))
	for r := range c.Racks {
		byName[c.Racks[r].Name] = r
	}
	seen := make(map[string]bool, len(racks))
	for i := range racks {
		rk := &racks[i]
		f := "racks[" + strconv.Itoa(i) + "]"
		r, ok := byName[rk.Name]
		switch {
		case !ok:
			return fieldErr(f+".name", "no machine is in rack %q", clip(rk.Name, 80))
		case seen[rk.Name]:
			return fieldErr(f+".name", "rack %q listed twice", rk.Name)
		case rk.PowerBudgetW != nil && !(*rk.PowerBudgetW > 0 && *rk.PowerBudgetW <= maxPowerW):
			return fieldErr(f+".power_budget_w", "%v must be > 0 and <= %g", *rk.PowerBudgetW, maxPowerW)
		case rk.UplinkGbps != nil && !(*rk.UplinkGbps > 0 && *rk.UplinkGbps <= maxGbps):
			return fieldErr(f+".uplink_gbps", "%v must be > 0 and <= %g", *rk.UplinkGbps, maxGbps)
		}
		seen[rk.Name] = true
		if rk.PowerBudgetW != nil {
			c.Racks[r].PowerBudgetW = *rk.PowerBudgetW
		}
		if rk.UplinkGbps != nil {
			c.Racks[r].UplinkGbps = *rk.UplinkGbps
		}
	}
	return nil
}

// job converts an API job to an env job that arrived wait_s before now.
// Errors name the field under prefix.
func (m *model) job(js *JobJSON, prefix string, now float64) (env.Job, error) {
	j := env.Job{Name: js.Name, Service: -1, Duration: defaultDurationS}
	switch js.Kind {
	case "", "batch":
		j.Kind = env.Batch
	case "training":
		j.Kind = env.Training
	case "service":
		j.Kind = env.Service
	default:
		return j, fieldErr(prefix+".kind", "%q is not batch, training or service", js.Kind)
	}
	j.QoS = env.Burstable
	if js.QoS != "" {
		q, ok := env.ParseQoS(js.QoS)
		if !ok {
			return j, fieldErr(prefix+".qos", "%q is not BE, Burstable, Guaranteed or LS", js.QoS)
		}
		j.QoS = q
	}
	switch {
	case js.CPUMilli < 0:
		return j, fieldErr(prefix+".cpu_milli", "%d must be >= 0", js.CPUMilli)
	case js.MemMiB < 0:
		return j, fieldErr(prefix+".mem_mib", "%d must be >= 0", js.MemMiB)
	case js.GPUs < 0 || js.GPUs > env.MaxGPUsPerMachine:
		return j, fieldErr(prefix+".gpus", "%d outside [0, %d]", js.GPUs, env.MaxGPUsPerMachine)
	case js.GPUs == 0 && js.GPUMilli != 0:
		return j, fieldErr(prefix+".gpu_milli", "%d without gpus", js.GPUMilli)
	case js.GPUMilli < 0 || js.GPUMilli > env.MilliGPU:
		return j, fieldErr(prefix+".gpu_milli", "%d outside (0, 1000]", js.GPUMilli)
	case js.GPUs > 1 && js.GPUMilli != 0 && js.GPUMilli != env.MilliGPU:
		return j, fieldErr(prefix+".gpu_milli", "%d with %d GPUs: multi-GPU jobs take whole GPUs", js.GPUMilli, js.GPUs)
	case !boundedTime(js.DeadlineS):
		return j, fieldErr(prefix+".deadline_s", "%v must be finite, >= 0 and <= %g", js.DeadlineS, MaxTimeS)
	case !boundedTime(js.LatencySLOS):
		return j, fieldErr(prefix+".latency_slo_s", "%v must be finite, >= 0 and <= %g", js.LatencySLOS, MaxTimeS)
	case !boundedTime(js.WaitS):
		return j, fieldErr(prefix+".wait_s", "%v must be finite, >= 0 and <= %g", js.WaitS, MaxTimeS)
	case len(js.Name) > maxKeyLen || len(js.Service) > maxKeyLen || len(js.Tenant) > maxKeyLen:
		return j, fieldErr(prefix+".name", "name, service or tenant longer than %d bytes", maxKeyLen)
	case len(js.GPUModels) > 64:
		return j, fieldErr(prefix+".gpu_models", "%d models, at most 64", len(js.GPUModels))
	}
	j.CPU, j.Mem, j.GPUs, j.GPUMilli = js.CPUMilli, js.MemMiB, js.GPUs, js.GPUMilli
	if j.GPUs > 0 && j.GPUMilli == 0 {
		j.GPUMilli = env.MilliGPU
	}
	for k, name := range js.GPUModels {
		if name == "" {
			return j, fieldErr(prefix+".gpu_models["+strconv.Itoa(k)+"]", "empty model name")
		}
	}
	j.GPUModels = js.GPUModels
	if d := js.DurationS; d != nil {
		if !boundedTime(*d) {
			return j, fieldErr(prefix+".duration_s", "%v must be finite, >= 0 and <= %g", *d, MaxTimeS)
		}
		j.Duration = *d
	}
	j.Deadline, j.LatencySLO = js.DeadlineS, js.LatencySLOS
	if js.Service != "" {
		j.Service = index(m.services, js.Service)
	}
	j.Tenant = index(m.tenants, js.Tenant)
	j.Migratable = js.Migratable
	// Network traffic: the model env's sources use when a trace has none.
	switch j.Kind {
	case env.Training:
		j.NetGbps = float64(j.GPUs)
	case env.Service:
		j.NetGbps = 0.5
	default:
		j.NetGbps = 0.05 * float64(j.CPU) / 1000
	}
	if g := js.NetGbps; g != nil {
		if !(*g >= 0 && *g <= maxGbps) {
			return j, fieldErr(prefix+".net_gbps", "%v must be finite, >= 0 and <= %g", *g, maxGbps)
		}
		j.NetGbps = *g
	}
	j.Arrival = max(0, now-js.WaitS)
	if err := j.Validate(); err != nil {
		return j, fieldErr(prefix, "%v", err)
	}
	return j, nil
}

// machineSpecs validates a full machine list.
func machineSpecs(ms []MachineJSON) ([]env.MachineSpec, error) {
	specs := make([]env.MachineSpec, len(ms))
	seen := make(map[string]int, len(ms))
	for i := range ms {
		m := &ms[i]
		f := "machines[" + strconv.Itoa(i) + "]"
		switch {
		case m.Name == "":
			return nil, fieldErr(f+".name", "empty")
		case len(m.Name) > maxKeyLen || len(m.Rack) > maxKeyLen || len(m.GPUModel) > maxKeyLen:
			return nil, fieldErr(f+".name", "name, rack or gpu_model longer than %d bytes", maxKeyLen)
		case m.CPUMilli <= 0:
			return nil, fieldErr(f+".cpu_milli", "%d must be > 0", m.CPUMilli)
		case m.MemMiB <= 0:
			return nil, fieldErr(f+".mem_mib", "%d must be > 0", m.MemMiB)
		case m.GPUs < 0 || m.GPUs > env.MaxGPUsPerMachine:
			return nil, fieldErr(f+".gpus", "%d outside [0, %d]", m.GPUs, env.MaxGPUsPerMachine)
		case m.GPUs > 0 && m.GPUModel == "":
			return nil, fieldErr(f+".gpu_model", "empty with %d GPUs", m.GPUs)
		case !(m.IdleW >= 0 && m.IdleW <= maxPowerW):
			return nil, fieldErr(f+".idle_w", "%v must be finite, >= 0 and <= %g", m.IdleW, maxPowerW)
		case !(m.PeakW >= 0 && m.PeakW <= maxPowerW) || (m.PeakW > 0 && m.PeakW < m.IdleW) || (m.PeakW == 0 && m.IdleW > 0):
			return nil, fieldErr(f+".peak_w", "%v must be finite and >= idle_w %v (or both 0)", m.PeakW, m.IdleW)
		}
		if k, dup := seen[m.Name]; dup {
			return nil, fieldErr(f+".name", "%q already names machines[%d]", m.Name, k)
		}
		seen[m.Name] = i
		specs[i] = env.MachineSpec{Name: m.Name, CPU: m.CPUMilli, Mem: m.MemMiB, GPUs: m.GPUs, GPUModel: m.GPUModel, Rack: m.Rack, IdleW: m.IdleW, PeakW: m.PeakW}
	}
	return specs, nil
}

// stateCheck validates a state update against the model (nil: none yet)
// before anything is applied: everything that makes a request wrong in
// itself (a field out of range, an unknown machine or job, a duplicate
// key) is a 400 that changes nothing.
func stateCheck(m *model, req *StateRequest) ([]env.MachineSpec, error) {
	if t := req.TimeS; t != nil && !boundedTime(*t) {
		return nil, fieldErr("time_s", "%v must be finite, >= 0 and <= %g", *t, MaxTimeS)
	}
	var specs []env.MachineSpec
	known := func(string) bool { return false }
	if m != nil {
		known = func(n string) bool { _, ok := m.machines[n]; return ok }
	}
	if len(req.Machines) > 0 {
		var err error
		if specs, err = machineSpecs(req.Machines); err != nil {
			return nil, err
		}
		names := make(map[string]bool, len(specs))
		for _, sp := range specs {
			names[sp.Name] = true
		}
		known = func(n string) bool { return names[n] }
		if len(req.Stopped) > 0 {
			return nil, fieldErr("stopped", "not allowed with machines: a full update forgets every job")
		}
	} else if m == nil {
		return nil, &conflictError{"no cluster yet: the first state update must list the machines"}
	}
	for i, st := range req.MachineStatus {
		if !known(st.Name) {
			return nil, fieldErr("machine_status["+strconv.Itoa(i)+"].name", "unknown machine %q", st.Name)
		}
	}
	running := func(key string) bool {
		if m == nil || len(req.Machines) > 0 {
			return false
		}
		_, ok := m.jobs[key]
		return ok
	}
	stopped := make(map[string]bool, len(req.Stopped))
	for i, key := range req.Stopped {
		f := "stopped[" + strconv.Itoa(i) + "]"
		switch {
		case reservedKey(key):
			return nil, fieldErr(f, "%q: keys starting %q are the extender's pod group reservations", key, gangResPrefix)
		case !running(key):
			return nil, fieldErr(f, "unknown job %q (not running)", key)
		case stopped[key]:
			return nil, fieldErr(f, "job %q listed twice", key)
		}
		stopped[key] = true
	}
	started := make(map[string]bool, len(req.Started))
	for i := range req.Started {
		sj := &req.Started[i]
		f := "started[" + strconv.Itoa(i) + "]"
		switch {
		case sj.Key == "":
			return nil, fieldErr(f+".key", "empty")
		case len(sj.Key) > maxKeyLen:
			return nil, fieldErr(f+".key", "%d bytes, at most %d", len(sj.Key), maxKeyLen)
		case reservedKey(sj.Key):
			return nil, fieldErr(f+".key", "%q: keys starting %q are the extender's pod group reservations", sj.Key, gangResPrefix)
		case started[sj.Key]:
			return nil, fieldErr(f+".key", "job %q listed twice", sj.Key)
		case running(sj.Key) && !stopped[sj.Key]:
			return nil, fieldErr(f+".key", "job %q already runs (stop it first)", sj.Key)
		case !known(sj.Machine):
			return nil, fieldErr(f+".machine", "unknown machine %q", sj.Machine)
		case sj.GPU != nil && (*sj.GPU < -1 || *sj.GPU >= env.MaxGPUsPerMachine):
			return nil, fieldErr(f+".gpu", "%d outside [-1, %d)", *sj.GPU, env.MaxGPUsPerMachine)
		}
		if u := sj.Usage; u != nil {
			if err := checkUsage(u, f+".usage"); err != nil {
				return nil, err
			}
		}
		// Validate the job's fields now (names are registered when it
		// starts; a failed check registers nothing that matters).
		if err := checkJob(&sj.Job, f+".job"); err != nil {
			return nil, err
		}
		started[sj.Key] = true
	}
	for i := range req.Usage {
		u := &req.Usage[i]
		f := "usage[" + strconv.Itoa(i) + "]"
		if !started[u.Key] && (!running(u.Key) || stopped[u.Key]) {
			return nil, fieldErr(f+".key", "unknown job %q (not running)", u.Key)
		}
		if err := checkUsage(u, f); err != nil {
			return nil, err
		}
	}
	if q := req.Queue; q != nil {
		switch {
		case q.Jobs < 0:
			return nil, fieldErr("queue.jobs", "%d must be >= 0", q.Jobs)
		case q.CPUMilli < 0:
			return nil, fieldErr("queue.cpu_milli", "%d must be >= 0", q.CPUMilli)
		case q.GPUMilli < 0:
			return nil, fieldErr("queue.gpu_milli", "%d must be >= 0", q.GPUMilli)
		case !boundedTime(q.MeanWaitS):
			return nil, fieldErr("queue.mean_wait_s", "%v must be finite, >= 0 and <= %g", q.MeanWaitS, MaxTimeS)
		}
	}
	return specs, nil
}

func checkUsage(u *UsageJSON, f string) error {
	switch {
	case !(u.CPURatio >= 0 && u.CPURatio <= maxRatio):
		return fieldErr(f+".cpu_ratio", "%v must be finite, >= 0 and <= %g", u.CPURatio, maxRatio)
	case !(u.MemRatio >= 0 && u.MemRatio <= maxRatio):
		return fieldErr(f+".mem_ratio", "%v must be finite, >= 0 and <= %g", u.MemRatio, maxRatio)
	}
	return nil
}

// checkJob validates a job's fields without registering its names.
func checkJob(js *JobJSON, prefix string) error {
	scratch := model{services: map[string]int{}, tenants: map[string]int{}}
	_, err := scratch.job(js, prefix, 0)
	return err
}

// apply carries out a checked state update; what cannot apply in the
// current state (a job that does not fit its machine) is listed in the
// response's rejections, the rest applies.
func (m *model) apply(req *StateRequest, resp *StateResponse) {
	l := m.live
	if t := req.TimeS; t != nil {
		l.AdvanceTo(*t)
	}
	for _, st := range req.MachineStatus {
		n, err := m.setUp(m.machines[st.Name], st.Up)
		if err != nil {
			resp.Rejected = append(resp.Rejected, Rejection{Field: "machine_status", Key: st.Name, Error: err.Error()})
		}
		resp.Stopped += n
	}
	for _, key := range req.Stopped {
		id, ok := m.jobs[key]
		if !ok {
			continue // its machine went down in this update
		}
		if err := l.Stop(id); err != nil {
			resp.Rejected = append(resp.Rejected, Rejection{Field: "stopped", Key: key, Error: err.Error()})
			continue
		}
		delete(m.jobs, key)
		delete(m.keys, id)
		resp.Stopped++
	}
	now := l.Now()
	for i := range req.Started {
		sj := &req.Started[i]
		f := "started[" + strconv.Itoa(i) + "]"
		j, err := m.job(&sj.Job, f+".job", now)
		if err == nil {
			j.ID = usageKey(sj.Key)
			gpu := -1
			if sj.GPU != nil {
				gpu = *sj.GPU
			}
			var id int
			if id, err = l.Start(&j, m.machines[sj.Machine], gpu); err == nil {
				m.jobs[sj.Key], m.keys[id] = id, sj.Key
				resp.Started++
				if u := sj.Usage; u != nil {
					err = l.SetUsage(id, u.CPURatio, u.MemRatio)
				}
			}
		}
		if err != nil {
			resp.Rejected = append(resp.Rejected, Rejection{Field: f, Key: sj.Key, Error: err.Error()})
		}
	}
	for i := range req.Usage {
		u := &req.Usage[i]
		id, ok := m.jobs[u.Key]
		if !ok {
			continue // its start was rejected above
		}
		if err := l.SetUsage(id, u.CPURatio, u.MemRatio); err != nil {
			resp.Rejected = append(resp.Rejected, Rejection{Field: "usage[" + strconv.Itoa(i) + "]", Key: u.Key, Error: err.Error()})
		}
	}
	if q := req.Queue; q != nil {
		if err := l.SetQueue(env.LiveQueue{Jobs: q.Jobs, CPU: q.CPUMilli, GPU: q.GPUMilli, MeanWait: q.MeanWaitS}); err != nil {
			resp.Rejected = append(resp.Rejected, Rejection{Field: "queue", Error: err.Error()})
		}
	}
}

// setUp marks machine i up or down and forgets the jobs that a machine
// going down loses; it returns how many.
func (m *model) setUp(i int, up bool) (int, error) {
	was := m.live.State().M[i].Up
	stopped, err := m.live.SetMachineUp(i, up)
	if now := m.live.State().M[i].Up; now != was {
		if now {
			m.up++
		} else {
			m.up--
		}
	}
	for _, id := range stopped {
		delete(m.jobs, m.keys[id])
		delete(m.keys, id)
	}
	return len(stopped), err
}

// fill writes the model's counters into resp.
func (m *model) fill(resp *StateResponse) {
	l := m.live
	resp.ModelTimeS, resp.Ticks = l.Now(), l.Ticks()
	resp.Machines = len(l.Cluster().Machines)
	resp.MachinesUp = m.up
	resp.RunningJobs = l.Running()
	if resp.Rejected == nil {
		resp.Rejected = []Rejection{}
	}
}
