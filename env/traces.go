package env

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// Trace loaders for the public Alibaba cluster traces (data/README.md gives
// their sources; the repository bundles part of each). Each loader has an
// io.Reader form, which the fuzz tests drive, and a path form, where "" is
// the bundled copy and a path is a file (plain or .gz) or a folder holding
// the table under its usual name. Malformed rows are errors that name the
// file, line and column; nothing is silently skipped.

// LoadAlibabaGPUNodes reads alibaba-gpu-v2023/nodes.csv into a cluster
// ("" reads the bundled copy).
func LoadAlibabaGPUNodes(path string) (*Cluster, error) {
	return loadTable(tableGPUNodes, path, ReadAlibabaGPUNodes)
}

// ReadAlibabaGPUNodes parses the GPU cluster's node table (columns sn,
// cpu_milli, memory_mib, gpu, model). The trace has no network topology:
// machines are laid into racks of 20 in file order, 8 racks a leaf, 8 leaves
// a zone.
func ReadAlibabaGPUNodes(file string, r io.Reader) (*Cluster, error) {
	t, err := newTable(file, r, true, []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"})
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	seen := map[string]int{}
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		sn, err := t.nodeName("sn", seen)
		if err != nil {
			return nil, err
		}
		cpu, err := t.nonneg("cpu_milli", 1<<40)
		if err != nil {
			return nil, err
		}
		mem, err := t.nonneg("memory_mib", 1<<40)
		if err != nil {
			return nil, err
		}
		gpus, err := t.nonneg("gpu", MaxGPUsPerMachine)
		if err != nil {
			return nil, err
		}
		if cpu == 0 {
			return nil, t.fail("cpu_milli", "node has no CPU")
		}
		if mem == 0 {
			return nil, t.fail("memory_mib", "node has no memory")
		}
		model := t.str("model")
		if gpus > 0 && model == "" {
			return nil, t.fail("model", "node has %d GPUs but no model", gpus)
		}
		idx := len(c.Machines)
		c.Machines = append(c.Machines, newMachine(sn, cpu, mem, int(gpus), model, idx/defaultRackSize))
	}
	return finishNodes(file, c)
}

// nodeName reads a node's name from col: not empty and not seen before
// (seen maps names to their lines).
func (t *table) nodeName(col string, seen map[string]int) (string, error) {
	name := t.str(col)
	if name == "" {
		return "", t.fail(col, "empty node name")
	}
	if prev, dup := seen[name]; dup {
		return "", t.fail(col, "node %q repeated (first on line %d)", name, prev)
	}
	seen[name] = t.line
	return name, nil
}

// finishNodes lays a node table's machines into racks of defaultRackSize
// in file order (the traces have no topology) and validates the cluster.
func finishNodes(file string, c *Cluster) (*Cluster, error) {
	if len(c.Machines) == 0 {
		return nil, &ParseError{File: file, Line: 1, Err: fmt.Errorf("no nodes")}
	}
	layoutTopology(c, (len(c.Machines)+defaultRackSize-1)/defaultRackSize)
	return c, c.Validate()
}

// GPUTraceOptions controls how the GPU pod trace becomes a workload.
type GPUTraceOptions struct {
	// Compress divides all times (arrivals and durations); 1 keeps the
	// trace's real time. The 2023 trace spans about 150 days.
	Compress float64
	// Window keeps the pods created inside it (trace seconds).
	Window TraceWindow
	SLA    SLAPolicy
}

// LoadAlibabaGPUPods reads alibaba-gpu-v2023/pods.csv into a workload
// ("" reads the bundled copy).
func LoadAlibabaGPUPods(path string, opt GPUTraceOptions) (*Workload, error) {
	return loadTable(tableGPUPods, path, func(name string, r io.Reader) (*Workload, error) {
		return ReadAlibabaGPUPods(name, r, opt)
	})
}

// ReadAlibabaGPUPods parses the GPU cluster's pod table. Arrival is
// creation_time; duration is deletion_time - scheduled_time (pods never
// scheduled, such as Pending ones, use creation_time). gpu_milli above 1000
// is clamped to 1000 as in the FGD simulator. Multi-GPU pods are training
// gangs, LS pods are service replicas, the rest batch. The pods of
// opt.Window are kept and time starts at the first one's creation.
func ReadAlibabaGPUPods(file string, r io.Reader, opt GPUTraceOptions) (*Workload, error) {
	if err := checkCompress(file, opt.Compress); err != nil {
		return nil, err
	}
	if err := opt.Window.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if opt.SLA == (SLAPolicy{}) {
		opt.SLA = DefaultSLA
	}
	t, err := newTable(file, r, true, []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "creation_time", "deletion_time", "scheduled_time"})
	if err != nil {
		return nil, err
	}
	w := &Workload{Name: "alibaba-gpu:" + file}
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		j := Job{ID: len(w.Jobs), Name: t.str("name"), Service: -1}
		if j.CPU, err = t.nonneg("cpu_milli", 1<<40); err != nil {
			return nil, err
		}
		if j.Mem, err = t.nonneg("memory_mib", 1<<40); err != nil {
			return nil, err
		}
		g, err := t.nonneg("num_gpu", MaxGPUsPerMachine)
		if err != nil {
			return nil, err
		}
		milli, err := t.nonneg("gpu_milli", 1<<20)
		if err != nil {
			return nil, err
		}
		j.GPUs = int(g)
		switch {
		case g == 0:
			milli = 0
		case milli == 0:
			return nil, t.fail("gpu_milli", "pod asks for %d GPUs with gpu_milli 0", g)
		case milli > MilliGPU:
			milli = MilliGPU
		case g > 1 && milli < MilliGPU:
			return nil, t.fail("gpu_milli", "%d GPUs of %d milli: multi-GPU pods take whole GPUs", g, milli)
		}
		j.GPUMilli = int(milli)
		if spec := t.str("gpu_spec"); spec != "" {
			j.GPUModels = strings.Split(spec, "|")
			if slices.Contains(j.GPUModels, "") {
				return nil, t.fail("gpu_spec", "empty model in %q", spec)
			}
		}
		q, ok := ParseQoS(t.str("qos"))
		if !ok {
			return nil, t.fail("qos", "unknown QoS class %q (want LS, BE, Burstable or Guaranteed)", t.str("qos"))
		}
		j.QoS = q
		created, err := t.float("creation_time")
		if err != nil {
			return nil, err
		}
		deleted, err := t.float("deletion_time")
		if err != nil {
			return nil, err
		}
		start := created
		if t.str("scheduled_time") != "" {
			if start, err = t.float("scheduled_time"); err != nil {
				return nil, err
			}
		}
		switch {
		case created < 0:
			return nil, t.fail("creation_time", "negative time %v", created)
		case start < created:
			return nil, t.fail("scheduled_time", "%v is before creation_time %v", start, created)
		case deleted < start:
			return nil, t.fail("deletion_time", "%v is before the pod started (%v)", deleted, start)
		}
		if !opt.Window.contains(created) {
			continue
		}
		j.Arrival = created
		j.Duration = deleted - start
		switch {
		case j.GPUs > 1:
			j.Kind = Training
		case j.QoS == LatencySensitive:
			j.Kind = Service
		default:
			j.Kind = Batch
		}
		j.Tenant = int(j.QoS)
		j.Migratable = j.Kind != Training
		j.NetGbps = defaultNetGbps(&j)
		w.Jobs = append(w.Jobs, j)
	}
	if len(w.Jobs) == 0 {
		if opt.Window != (TraceWindow{}) {
			return nil, fmt.Errorf("%s: no pods created in %s", file, opt.Window)
		}
		return nil, &ParseError{File: file, Line: 1, Err: fmt.Errorf("no pods")}
	}
	finishTrace(w, opt.Compress, opt.SLA)
	return w, nil
}

// Alibaba2018Options maps the 2018 trace's normalised units.
type Alibaba2018Options struct {
	// MemMiB is the memory of a machine whose normalised mem_size is 100
	// (the trace hides the real size). Default 512 GiB.
	MemMiB int64
	// Compress divides all times of the batch trace.
	Compress float64
	// Window keeps the tasks submitted inside it (trace seconds).
	Window TraceWindow
	// MaxInstances caps how many instances of one batch task become jobs
	// (the trace has 2.5M instances in 31,756 tasks); 0 expands all.
	MaxInstances int
	SLA          SLAPolicy
}

func (o *Alibaba2018Options) defaults() {
	if o.MemMiB <= 0 {
		o.MemMiB = 512 * 1024
	}
	if o.Compress <= 0 {
		o.Compress = 1
	}
	if o.SLA == (SLAPolicy{}) {
		o.SLA = DefaultSLA
	}
}

// LoadAlibaba2018Machines reads alibaba-v2018/machine_meta.csv ("" reads
// the bundled copy).
func LoadAlibaba2018Machines(path string, opt Alibaba2018Options) (*Cluster, error) {
	return loadTable(table2018Meta, path, func(name string, r io.Reader) (*Cluster, error) {
		return ReadAlibaba2018Machines(name, r, opt)
	})
}

// ReadAlibaba2018Machines parses the 2018 machine table (no header; columns
// machine_id, time_stamp, failure_domain_1, failure_domain_2, cpu_num,
// mem_size, status). A machine appears once per event; its first row gives
// its capacity and failure domains. failure_domain_1 becomes the rack and
// failure_domain_2 the leaf switch; all leaves form one zone per 8.
func ReadAlibaba2018Machines(file string, r io.Reader, opt Alibaba2018Options) (*Cluster, error) {
	opt.defaults()
	t, err := newTable(file, r, false, []string{"machine_id", "time_stamp", "failure_domain_1", "failure_domain_2", "cpu_num", "mem_size", "status"})
	if err != nil {
		return nil, err
	}
	type mrow struct {
		id       string
		fd1, fd2 int64
		cpu, mem int64
	}
	var rows []mrow
	seen := map[string]int{}
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		id := t.str("machine_id")
		if id == "" {
			return nil, t.fail("machine_id", "empty machine id")
		}
		if _, err := t.float("time_stamp"); err != nil {
			return nil, err
		}
		// The real table leaves a failure domain empty on some rows; a
		// machine takes the first value any of its rows gives (-1: none).
		fd1, fd2 := int64(-1), int64(-1)
		if t.str("failure_domain_1") != "" {
			if fd1, err = t.nonneg("failure_domain_1", 1<<30); err != nil {
				return nil, err
			}
		}
		if t.str("failure_domain_2") != "" {
			if fd2, err = t.nonneg("failure_domain_2", 1<<30); err != nil {
				return nil, err
			}
		}
		cores, err := t.nonneg("cpu_num", 1<<20)
		if err != nil {
			return nil, err
		}
		mem, err := t.float("mem_size")
		if err != nil {
			return nil, err
		}
		if cores == 0 {
			return nil, t.fail("cpu_num", "machine has no CPU")
		}
		if mem <= 0 {
			return nil, t.fail("mem_size", "%v must be > 0", mem)
		}
		if mem > 1e4 {
			return nil, t.fail("mem_size", "%v above 10000 (normalised: 100 is a full machine)", mem)
		}
		if int64(mem/100*float64(opt.MemMiB)) < 1 {
			return nil, t.fail("mem_size", "%v is less than 1 MiB at %d MiB per 100", mem, opt.MemMiB)
		}
		if k, ok := seen[id]; ok {
			if rows[k].fd1 < 0 {
				rows[k].fd1 = fd1
			}
			if rows[k].fd2 < 0 {
				rows[k].fd2 = fd2
			}
			continue
		}
		seen[id] = len(rows)
		rows = append(rows, mrow{id: id, fd1: fd1, fd2: fd2, cpu: cores * 1000, mem: int64(mem / 100 * float64(opt.MemMiB))})
	}
	if len(rows) == 0 {
		return nil, &ParseError{File: file, Line: 1, Err: fmt.Errorf("no machines")}
	}
	// Racks are failure_domain_1 values in order of first appearance; a
	// rack's leaf is the failure_domain_2 of its first machine.
	c := &Cluster{}
	rackOf := map[int64]int{}
	leafOf := map[int64]int{}
	var rackLeaf []int
	for _, m := range rows {
		rk, ok := rackOf[m.fd1]
		if !ok {
			rk = len(rackLeaf)
			rackOf[m.fd1] = rk
			lf, ok := leafOf[m.fd2]
			if !ok {
				lf = len(leafOf)
				leafOf[m.fd2] = lf
			}
			rackLeaf = append(rackLeaf, lf)
		}
		c.Machines = append(c.Machines, newMachine(m.id, m.cpu, max(m.mem, 1), 0, "", rk))
	}
	layoutTopology(c, len(rackLeaf))
	for r := range c.Racks {
		c.Racks[r].Leaf = rackLeaf[r]
	}
	nleaves := len(leafOf)
	c.Leaves = make([]Leaf, nleaves)
	c.Zones = make([]Zone, (nleaves+defaultLeavesPerZone-1)/defaultLeavesPerZone)
	for z := range c.Zones {
		c.Zones[z] = Zone{Name: "zone-" + itoa(int64(z))}
	}
	for fd, l := range leafOf {
		c.Leaves[l] = Leaf{Name: "fd2-" + itoa(fd), Zone: l / defaultLeavesPerZone, UplinkGbps: defaultLeafUplink}
	}
	for fd, r := range rackOf {
		c.Racks[r].Name = "fd1-" + itoa(fd)
	}
	return c, c.Validate()
}

// LoadAlibaba2018Batch reads alibaba-v2018-batch/jobs.csv ("" reads the
// bundled copy).
func LoadAlibaba2018Batch(path string, opt Alibaba2018Options) (*Workload, error) {
	return loadTable(table2018Batch, path, func(name string, r io.Reader) (*Workload, error) {
		return ReadAlibaba2018Batch(name, r, opt)
	})
}

// ReadAlibaba2018Batch parses the 2018 batch task table (columns: row index,
// submit_time, duration, cpu (cores), memory (fraction of a machine), job_id,
// task_id, instances_num, disk). Each instance is a CPU batch job, capped at
// opt.MaxInstances per task. The tasks of opt.Window are kept and time
// starts at the first one's submission.
func ReadAlibaba2018Batch(file string, r io.Reader, opt Alibaba2018Options) (*Workload, error) {
	opt.defaults()
	if err := checkCompress(file, opt.Compress); err != nil {
		return nil, err
	}
	if err := opt.Window.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	t, err := newTable(file, r, true, []string{"submit_time", "duration", "cpu", "memory", "job_id", "task_id", "instances_num"})
	if err != nil {
		return nil, err
	}
	w := &Workload{Name: "alibaba-batch:" + file}
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		submit, err := t.float("submit_time")
		if err != nil {
			return nil, err
		}
		if submit < 0 {
			return nil, t.fail("submit_time", "negative time %v", submit)
		}
		dur, err := t.float("duration")
		if err != nil {
			return nil, err
		}
		if dur < 0 {
			return nil, t.fail("duration", "negative duration %v", dur)
		}
		cpu, err := t.float("cpu")
		if err != nil {
			return nil, err
		}
		if cpu < 0 || cpu > 1e6 {
			return nil, t.fail("cpu", "%v cores outside [0, 1e6]", cpu)
		}
		mem, err := t.float("memory")
		if err != nil {
			return nil, err
		}
		if mem < 0 || mem > 1 {
			return nil, t.fail("memory", "%v outside [0, 1] (a fraction of a machine)", mem)
		}
		jobID, err := t.nonneg("job_id", 1<<40)
		if err != nil {
			return nil, err
		}
		taskID, err := t.nonneg("task_id", 1<<40)
		if err != nil {
			return nil, err
		}
		inst, err := t.nonneg("instances_num", 1<<30)
		if err != nil {
			return nil, err
		}
		if inst == 0 {
			return nil, t.fail("instances_num", "task has no instances")
		}
		if opt.MaxInstances > 0 {
			inst = min(inst, int64(opt.MaxInstances))
		}
		if !opt.Window.contains(submit) {
			continue
		}
		for k := int64(0); k < inst; k++ {
			j := Job{
				ID:         len(w.Jobs),
				Name:       "j" + itoa(jobID) + "-t" + itoa(taskID) + "-i" + itoa(k),
				Kind:       Batch,
				QoS:        BestEffort,
				Arrival:    submit,
				Duration:   dur,
				CPU:        max(int64(math.Round(cpu*1000)), 1),
				Mem:        max(int64(math.Round(mem*float64(opt.MemMiB))), 1),
				Service:    -1,
				Tenant:     int(jobID % 16),
				Migratable: true,
			}
			j.NetGbps = defaultNetGbps(&j)
			w.Jobs = append(w.Jobs, j)
		}
	}
	if len(w.Jobs) == 0 {
		if opt.Window != (TraceWindow{}) {
			return nil, fmt.Errorf("%s: no tasks submitted in %s", file, opt.Window)
		}
		return nil, &ParseError{File: file, Line: 1, Err: fmt.Errorf("no tasks")}
	}
	finishTrace(w, opt.Compress, opt.SLA)
	return w, nil
}

// sortByArrival orders jobs by arrival (stable, so equal times keep file
// order) and renumbers their IDs.
func sortByArrival(w *Workload) {
	slices.SortStableFunc(w.Jobs, func(a, b Job) int {
		switch {
		case a.Arrival < b.Arrival:
			return -1
		case a.Arrival > b.Arrival:
			return 1
		}
		return 0
	})
	for i := range w.Jobs {
		w.Jobs[i].ID = i
	}
}

// SLAPolicy assigns SLAs to jobs whose source has none.
type SLAPolicy struct {
	// DeadlineFactor: a batch or training job's deadline is this many times
	// its duration after arrival, plus DeadlineGrace seconds.
	DeadlineFactor float64
	DeadlineGrace  float64
	// ServiceWait is a service replica's queue-wait target in seconds.
	ServiceWait float64
}

// DefaultSLA gives batch work 3x its duration plus 5 minutes, and services
// one minute to start.
var DefaultSLA = SLAPolicy{DeadlineFactor: 3, DeadlineGrace: 300, ServiceWait: 60}

func (p SLAPolicy) apply(j *Job) {
	if j.Kind == Service {
		j.LatencySLO = p.ServiceWait
		return
	}
	j.Deadline = p.DeadlineFactor*j.Duration + p.DeadlineGrace
}
