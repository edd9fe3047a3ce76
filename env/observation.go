package env

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// This file holds the observation tensors: the flat, documented layout
// that the GNN encoders, the Arrow datasets and the serving API share
// (docs/observation.md). Its schema hash is stored with every policy and
// dataset so that a layout mismatch is refused, not silently mis-read.

// HistoryLen is the number of ticks in a machine's load history.
const HistoryLen = 12

// Normalisation constants. Capacities and demands share one scale per
// resource, so a network can compare a job's demand with a machine's free
// capacity directly. Changing one changes the schema hash.
const (
	obsCPUNorm     = 64000.0  // millicores: 64 cores is 1
	obsMemNorm     = 262144.0 // MiB: 256 GiB is 1
	obsGPUNorm     = 8000.0   // milli-GPU: 8 GPUs is 1
	obsGPUsNorm    = 8.0      // GPU counts
	obsBwNorm      = 100.0    // Gbit/s of a link
	obsLatNorm     = 100.0    // µs of a path
	obsNetNorm     = 10.0     // Gbit/s of a job's traffic
	obsJobsNorm    = 16.0     // jobs per machine
	obsSharersNorm = 8.0      // jobs per GPU
	obsRestarts    = 4.0      // restarts of a job
	obsTimeScale   = 60.0     // s: durations enter as ln(1 + s/60)/8
	obsTimeLog     = 8.0
	obsQueueLog    = 10.0 // queue length enters as ln(1 + n)/10
	obsDay         = 86400.0
	obsGamma0      = 0.05 // temperature unit: the default γ0
)

// Degree bounds of the network relation: a rack larger than
// obsMaxRackPeers+1 machines is wired as a circulant graph (each machine
// to the obsMaxRackPeers/2 machines before and after it in rack order)
// instead of a clique, and a machine has rails to at most obsMaxRailPeers
// other racks of its leaf, so the relation stays O(machines) on any trace.
const (
	obsMaxRackPeers = 24
	obsMaxRailPeers = 8
)

// Machine feature columns (rows: machines, in Cluster order).
const (
	mUp = iota
	mCPUCap
	mMemCap
	mGPUCap
	mRackUplink
	mCPUAlloc
	mMemAlloc
	mGPUAlloc
	mGPUFullFree
	mCPUUse
	mMemUse
	mPower
	mMemBarrier
	mFrag
	mJobs
	mPotential
	mCold
	mRackCongestion
	mRackPower
	// MachineFeatures is the width of a machine row.
	MachineFeatures = iota
)

// gpuModelVocab is the fixed GPU model vocabulary of the one-hot model
// columns: every model with a known power envelope. A model outside it
// sets model_other. A fixed list keeps the layout independent of the
// cluster (a per-cluster list would change the width and the hash).
var gpuModelVocab = [...]string{"A10", "A100", "G1", "G2", "G3", "H100", "P100", "T4", "V100M16", "V100M32"}

// GPU feature columns (rows: GPUs, machine by machine, in device order).
const (
	gFree = iota
	gIdle
	gSharers
	gMachineUp
	gGroup
	gNUMA
	gModel // first of the one-hot model columns, one per gpuModelVocab entry
)

const (
	gModelOther = gModel + len(gpuModelVocab)
	// GPUFeatures is the width of a GPU row.
	GPUFeatures = gModelOther + 1
)

// gpuModelOther is the index of model_other within the model columns.
const gpuModelOther = gModelOther - gModel

// Job feature columns (rows: the pending job, then the running jobs).
const (
	jCPU = iota
	jMem
	jGPU
	jGPUs
	jGPUMilli
	jShare
	jKindBatch
	jKindTraining
	jKindService
	jQoSBE
	jQoSBurstable
	jQoSGuaranteed
	jQoSLS
	jRunning
	jMigrating
	jWorkLeft
	jRate
	jAge
	jPhaseTime
	jHasDeadline
	jDeadlineSlack
	jPriority
	jMigratable
	jReplica
	jNet
	jRestarts
	jCPUUse
	jMemUse
	jModelConstrained
	// JobFeatures is the width of a job row.
	JobFeatures = iota
)

// Global feature columns.
const (
	oDamping = iota
	oDampingTarget
	oDampingOverridden
	oTemperature
	oPhi
	oPhiMean
	oPhiVar
	oChi
	oPhiLag1
	oQueue
	oQueuePerMachine
	oRunningPerMachine
	oTokenSupply
	oUtilCPU
	oUtilMem
	oUtilGPU
	oUpCPU
	oUpGPU
	oPower
	oGPUFrag
	oTimeSin
	oTimeCos
	oSimTime
	oReward
	oRewardSuccess
	oRewardEnergy
	oRewardLatency
	oFieldAge
	oHistoryValid
	oPending
	oFeasible
	// GlobalFeatures is the length of the global vector.
	GlobalFeatures = iota
)

// Load history channels.
const (
	hCPUAlloc = iota
	hMemAlloc
	hGPUAlloc
	hCPUUse
	hMemUse
	hPower
	// HistoryChannels is the number of channels per history step.
	HistoryChannels = iota
)

// Relation is an edge type of the heterogeneous graph.
type Relation int

// The relations, each with a fixed source and destination node type.
const (
	RelNetwork       Relation = iota // machine → machine: network links
	RelPCIe                          // GPU → machine: the GPU's host
	RelNVLink                        // GPU → GPU: same machine (NVLink group, NUMA socket)
	RelRunsOnMachine                 // job → machine
	RelRunsOnGPU                     // job → GPU
	NumRelations     = iota
)

// NodeType is a node type of the heterogeneous graph.
type NodeType int

// The node types; their feature matrices are Tensors.Machine, GPU and Job.
const (
	NodeMachine NodeType = iota
	NodeGPU
	NodeJob
)

var nodeTypeNames = [...]string{"machine", "gpu", "job"}

func (n NodeType) String() string {
	if int(n) < len(nodeTypeNames) && n >= 0 {
		return nodeTypeNames[n]
	}
	return "node(" + strconv.Itoa(int(n)) + ")"
}

var relationInfo = [NumRelations]struct {
	name     string
	src, dst NodeType
}{
	RelNetwork:       {"network", NodeMachine, NodeMachine},
	RelPCIe:          {"pcie", NodeGPU, NodeMachine},
	RelNVLink:        {"nvlink", NodeGPU, NodeGPU},
	RelRunsOnMachine: {"runs_on_machine", NodeJob, NodeMachine},
	RelRunsOnGPU:     {"runs_on_gpu", NodeJob, NodeGPU},
}

func (r Relation) String() string {
	if r >= 0 && int(r) < NumRelations {
		return relationInfo[r].name
	}
	return "relation(" + strconv.Itoa(int(r)) + ")"
}

// Nodes returns the node types of the relation's source and destination.
func (r Relation) Nodes() (src, dst NodeType) {
	return relationInfo[r].src, relationInfo[r].dst
}

// Edge feature columns per relation.
const (
	eBandwidth = iota
	eLatency
	eSameRack
	netEdgeFeatures = iota
)

const (
	eSameGroup = iota
	eSameNUMA
	nvlinkEdgeFeatures = iota
)

const (
	eCPUShare = iota
	eMemShare
	eGPUShare
	runsOnMachineFeatures = iota
)

var edgeFeatures = [NumRelations]int{
	RelNetwork:       netEdgeFeatures,
	RelPCIe:          1,
	RelNVLink:        nvlinkEdgeFeatures,
	RelRunsOnMachine: runsOnMachineFeatures,
	RelRunsOnGPU:     1,
}

// EdgeFeatures returns the width of relation r's edge feature rows.
func EdgeFeatures(r Relation) int { return edgeFeatures[r] }

// Column describes one feature column of the layout.
type Column struct {
	Name string // snake_case, unique within its block
	Unit string // unit of the raw quantity
	Norm string // how the raw value becomes the feature
}

// Block is one tensor of the layout: its name, its shape in words
// (row dimension × ... × columns) and its columns in order.
type Block struct {
	Name    string
	Shape   string
	Columns []Column
}

// Column tables, keyed by the index constants so that a column can only
// sit at its constant's position (a gap leaves an empty name, which
// TestObservationSchemaComplete catches).
var machineColumns = [MachineFeatures]Column{
	mUp:             {"up", "flag", "1 if the machine is up"},
	mCPUCap:         {"cpu_cap", "millicores", "x/64000"},
	mMemCap:         {"mem_cap", "MiB", "x/262144"},
	mGPUCap:         {"gpu_cap", "GPUs", "x/8"},
	mRackUplink:     {"rack_uplink", "Gbit/s", "x/100"},
	mCPUAlloc:       {"cpu_alloc", "ratio", "1 - free/cap"},
	mMemAlloc:       {"mem_alloc", "ratio", "1 - free/cap"},
	mGPUAlloc:       {"gpu_alloc", "ratio", "1 - idle_milli/(gpus*1000); 0 without GPUs"},
	mGPUFullFree:    {"gpu_full_free", "GPUs", "fully free GPUs/8"},
	mCPUUse:         {"cpu_use", "ratio", "millicores in use/cap (bursts exceed 1)"},
	mMemUse:         {"mem_use", "ratio", "MiB in use/cap"},
	mPower:          {"power", "ratio", "draw W/peak W; 0 when down"},
	mMemBarrier:     {"mem_barrier", "ratio", "(cap - use - H*g_max*growing_req)/cap clipped to [-1,1]"},
	mFrag:           {"gpu_frag", "ratio", "F_n(M)/(gpus*1000); 0 without GPUs"},
	mJobs:           {"jobs", "count", "x/16"},
	mPotential:      {"potential", "energy", "ln(1+V) on the visible field; 0 when down"},
	mCold:           {"cold", "flag", "1 if in the visible field's cold list (CPU or GPU)"},
	mRackCongestion: {"rack_congestion", "ratio", "kappa of the rack on the visible field"},
	mRackPower:      {"rack_power", "ratio", "pi of the rack on the visible field"},
}

var gpuColumns = func() [GPUFeatures]Column {
	c := [GPUFeatures]Column{
		gFree:       {"free", "milli-GPU", "x/1000"},
		gIdle:       {"idle", "flag", "1 if free == 1000"},
		gSharers:    {"sharers", "jobs", "x/8"},
		gMachineUp:  {"machine_up", "flag", "1 if its machine is up"},
		gGroup:      {"nvlink_group", "index", "raw"},
		gNUMA:       {"numa_socket", "index", "raw"},
		gModelOther: {"model_other", "flag", "1 if the model is not in the vocabulary"},
	}
	for k, name := range gpuModelVocab {
		c[gModel+k] = Column{"model_" + strings.ToLower(name), "flag", "1 if the model is " + name}
	}
	return c
}()

var jobColumns = [JobFeatures]Column{
	jCPU:              {"cpu", "millicores", "x/64000"},
	jMem:              {"mem", "MiB", "x/262144"},
	jGPU:              {"gpu", "milli-GPU", "gpus*milli/8000"},
	jGPUs:             {"gpus", "GPUs", "x/8"},
	jGPUMilli:         {"gpu_milli", "milli-GPU", "per-GPU demand/1000"},
	jShare:            {"share", "flag", "1 for a fraction of one GPU"},
	jKindBatch:        {"kind_batch", "flag", "one-hot kind"},
	jKindTraining:     {"kind_training", "flag", "one-hot kind"},
	jKindService:      {"kind_service", "flag", "one-hot kind"},
	jQoSBE:            {"qos_be", "flag", "one-hot QoS"},
	jQoSBurstable:     {"qos_burstable", "flag", "one-hot QoS"},
	jQoSGuaranteed:    {"qos_guaranteed", "flag", "one-hot QoS"},
	jQoSLS:            {"qos_ls", "flag", "one-hot QoS"},
	jRunning:          {"running", "flag", "1 running, 0 pending"},
	jMigrating:        {"migrating", "flag", "1 during migration downtime"},
	jWorkLeft:         {"work_left", "s", "ln(1+x/60)/8"},
	jRate:             {"rate", "ratio", "progress per second; 0 pending"},
	jAge:              {"age", "s", "ln(1+(now-arrival)/60)/8"},
	jPhaseTime:        {"phase_time", "s", "ln(1+x/60)/8 of time running (running) or waiting (pending)"},
	jHasDeadline:      {"has_deadline", "flag", "1 with a completion SLA"},
	jDeadlineSlack:    {"deadline_slack", "ratio", "(arrival+deadline-now)/deadline clipped to [-1,1]; 0 without"},
	jPriority:         {"priority", "ratio", "2^(-B_k/S_k) of its tenant; 1 with tokens off"},
	jMigratable:       {"migratable", "flag", "1 if the dynamics may move it"},
	jReplica:          {"replica", "flag", "1 for a service replica"},
	jNet:              {"net", "Gbit/s", "x/10"},
	jRestarts:         {"restarts", "count", "x/4"},
	jCPUUse:           {"cpu_use", "ratio", "CPU in use/request; 0 pending"},
	jMemUse:           {"mem_use", "ratio", "memory in use/request; 0 pending"},
	jModelConstrained: {"model_constrained", "flag", "1 if it names allowed GPU models"},
}

var globalColumns = [GlobalFeatures]Column{
	oDamping:           {"damping", "D", "D/D_max; 0 if D_max is 0"},
	oDampingTarget:     {"damping_target", "D", "D*/D_max"},
	oDampingOverridden: {"damping_overridden", "flag", "1 if a policy set D this tick"},
	oTemperature:       {"temperature", "energy", "T_eff/0.05"},
	oPhi:               {"phi", "ratio", "raw"},
	oPhiMean:           {"phi_mean", "ratio", "raw"},
	oPhiVar:            {"phi_var", "ratio^2", "raw"},
	oChi:               {"chi", "ratio", "raw"},
	oPhiLag1:           {"phi_lag1", "correlation", "raw"},
	oQueue:             {"queue", "jobs", "ln(1+x)/10"},
	oQueuePerMachine:   {"queue_per_machine", "jobs", "queued/machines"},
	oRunningPerMachine: {"running_per_machine", "jobs", "running/machines/16"},
	oTokenSupply:       {"token_supply", "tokens", "supply/bound; 0 without evaporation"},
	oUtilCPU:           {"util_cpu", "ratio", "allocated/capacity up"},
	oUtilMem:           {"util_mem", "ratio", "allocated/capacity up"},
	oUtilGPU:           {"util_gpu", "ratio", "allocated/capacity up; 0 without GPUs"},
	oUpCPU:             {"up_cpu", "ratio", "capacity up/total"},
	oUpGPU:             {"up_gpu", "ratio", "capacity up/total; 0 without GPUs"},
	oPower:             {"power", "ratio", "draw W/all machines at peak W"},
	oGPUFrag:           {"gpu_frag", "ratio", "sum F_n(M)/GPU capacity up"},
	oTimeSin:           {"time_of_day_sin", "s", "sin(2*pi*(now mod 86400)/86400)"},
	oTimeCos:           {"time_of_day_cos", "s", "cos(2*pi*(now mod 86400)/86400)"},
	oSimTime:           {"sim_time", "s", "x/86400"},
	oReward:            {"reward", "reward", "raw, last tick"},
	oRewardSuccess:     {"reward_success", "ratio", "raw, last tick"},
	oRewardEnergy:      {"reward_energy", "ratio", "raw, last tick"},
	oRewardLatency:     {"reward_latency", "ratio", "raw, last tick"},
	oFieldAge:          {"field_age", "ticks", "age of the visible field/(field_every+staleness)"},
	oHistoryValid:      {"history_valid", "ticks", "recorded history steps/12"},
	oPending:           {"pending", "flag", "1 if a pending job is given"},
	oFeasible:          {"feasible", "ratio", "machines in the mask/machines"},
}

var historyColumns = [HistoryChannels]Column{
	hCPUAlloc: {"cpu_alloc", "ratio", "1 - free/cap"},
	hMemAlloc: {"mem_alloc", "ratio", "1 - free/cap"},
	hGPUAlloc: {"gpu_alloc", "ratio", "1 - idle_milli/(gpus*1000); 0 without GPUs"},
	hCPUUse:   {"cpu_use", "ratio", "millicores in use/cap"},
	hMemUse:   {"mem_use", "ratio", "MiB in use/cap"},
	hPower:    {"power", "ratio", "draw W/peak W"},
}

var edgeColumns = [NumRelations][]Column{
	RelNetwork: {
		eBandwidth: {"bandwidth", "Gbit/s", "x/100"},
		eLatency:   {"latency", "us", "x/100"},
		eSameRack:  {"same_rack", "flag", "1 within a rack, 0 for a rail across racks"},
	},
	RelPCIe: {{"numa_socket", "index", "raw"}},
	RelNVLink: {
		eSameGroup: {"same_nvlink_group", "flag", "1 if both GPUs share an NVLink group"},
		eSameNUMA:  {"same_numa", "flag", "1 if both GPUs hang off one NUMA socket"},
	},
	RelRunsOnMachine: {
		eCPUShare: {"cpu_share", "ratio", "job CPU/machine CPU"},
		eMemShare: {"mem_share", "ratio", "job memory/machine memory"},
		eGPUShare: {"gpu_share", "ratio", "job GPU milli/(machine gpus*1000); 0 without"},
	},
	RelRunsOnGPU: {{"gpu_share", "ratio", "milli held on the GPU/1000"}},
}

// observationBlocks is the canonical layout: the schema hash is computed
// from it, and docs/observation.md is checked against it.
var observationBlocks = func() []Block {
	b := []Block{
		{"machine", "machines × " + strconv.Itoa(MachineFeatures), machineColumns[:]},
		{"gpu", "gpus × " + strconv.Itoa(GPUFeatures), gpuColumns[:]},
		{"job", "jobs × " + strconv.Itoa(JobFeatures), jobColumns[:]},
		{"pending", strconv.Itoa(JobFeatures) + " (job columns)", nil},
		{"mask", "machines (bool)", nil},
		{"global", strconv.Itoa(GlobalFeatures), globalColumns[:]},
		{"history", "machines × " + strconv.Itoa(HistoryLen) + " × " + strconv.Itoa(HistoryChannels) + " (oldest first)", historyColumns[:]},
	}
	for r := Relation(0); r < NumRelations; r++ {
		src, dst := r.Nodes()
		b = append(b, Block{
			Name:    "edge." + r.String(),
			Shape:   "edges(" + src.String() + " -> " + dst.String() + ") × " + strconv.Itoa(edgeFeatures[r]),
			Columns: edgeColumns[r],
		})
	}
	return b
}()

// ObservationSchema returns the observation layout: every block with its
// shape and its columns' names, units and normalisation, in order.
func ObservationSchema() []Block {
	out := make([]Block, len(observationBlocks))
	for i, b := range observationBlocks {
		out[i] = Block{b.Name, b.Shape, slices.Clone(b.Columns)}
	}
	return out
}

// ColumnIndex returns the position of column name in block, or -1.
func ColumnIndex(block, name string) int {
	for _, b := range observationBlocks {
		if b.Name != block {
			continue
		}
		for i, c := range b.Columns {
			if c.Name == name {
				return i
			}
		}
	}
	return -1
}

// schemaText is the canonical description the hash is computed from: one
// line per block and per column, with names, shapes, units and
// normalisation in layout order, plus the degree bounds of the network
// relation (they change which edges exist).
func schemaText(blocks []Block) string {
	var sb strings.Builder
	sb.WriteString("tegrl observation v1\n")
	sb.WriteString("network rack_peers=" + strconv.Itoa(obsMaxRackPeers) + " rail_peers=" + strconv.Itoa(obsMaxRailPeers) + "\n")
	for _, b := range blocks {
		sb.WriteString("block " + b.Name + " [" + b.Shape + "]\n")
		for _, c := range b.Columns {
			sb.WriteString("  " + c.Name + " | " + c.Unit + " | " + c.Norm + "\n")
		}
	}
	return sb.String()
}

func schemaHash(blocks []Block) string {
	sum := sha256.Sum256([]byte(schemaText(blocks)))
	return hex.EncodeToString(sum[:])
}

var observationSchemaHash = schemaHash(observationBlocks)

// ObservationSchemaHash returns the SHA-256 (hex) of the canonical layout
// description. Policies and datasets store it; a reader refuses data whose
// hash differs from its own.
func ObservationSchemaHash() string { return observationSchemaHash }

// Edges is one relation's edge list in COO form, sorted by source then
// destination. Src and Dst index the node matrices of the relation's
// source and destination types (Relation.Nodes); Feat holds one row of
// EdgeFeatures(r) values per edge.
type Edges struct {
	Src, Dst []int32
	Feat     []float32
}

// Len is the number of edges.
func (e *Edges) Len() int { return len(e.Src) }

// fillPendingOnly writes the pending job's row alone: no running job
// rows, no runs-on edges (PendingOnly).
func (t *Tensors) fillPendingOnly(s *Sim, pending *Job) {
	t.PendingRow, t.Jobs = -1, 0
	clear(t.Pending)
	for _, r := range []Relation{RelRunsOnMachine, RelRunsOnGPU} {
		e := &t.Edges[r]
		e.Src, e.Dst, e.Feat = e.Src[:0], e.Dst[:0], e.Feat[:0]
	}
	t.jobsOK = false // the next full refresh must not copy rows from here
	if pending == nil {
		t.Job, t.JobID = t.Job[:0], t.JobID[:0]
		return
	}
	var rec *jobRec
	if id := pending.ID; id >= 0 && id < len(s.jobs) && s.jobs[id].state == queued {
		rec = &s.jobs[id]
	}
	t.Job, t.JobID = obsGrow(t.Job, JobFeatures), obsGrow(t.JobID, 1)
	t.fillJob(s, t.Job, pending, rec)
	copy(t.Pending, t.Job)
	t.JobID[0] = int32(pending.ID)
	t.PendingRow, t.Jobs = 0, 1
}

// Tensors is the observation in the flat layout of docs/observation.md.
// All matrices are row-major float32. Sim.Observe refreshes a Tensors in
// place: the first call sizes the buffers and builds the static parts
// (capacities, topology edges); later calls allocate nothing unless the
// number of running jobs (or tenants) grew past what the buffers held.
//
// Read the fields anew after every refresh: the job rows, their IDs and
// the runs-on edges alternate between two buffers, so that unchanged
// machines' jobs can be copied from the previous refresh.
type Tensors struct {
	Machines, GPUs, Jobs int // rows of the node matrices

	// PendingOnly, set by the caller, skips the running jobs: the job
	// matrix then holds the pending job alone and the runs-on relations are
	// empty; everything else is as in a full refresh. A policy that reads
	// machines, history, mask, global features and the pending job saves
	// the largest part of a refresh (one row per running job).
	PendingOnly bool

	// Sparse refreshes (Sim.ObserveSparse) touch the candidates only.
	sparse         bool
	sparseFeasible float32
	sparseSet      []int32 // mask entries a sparse refresh set
	maskWide       bool    // a full refresh may have set any mask entry

	Machine []float32 // [Machines × MachineFeatures], row i is machine i
	// GPU rows follow the machines' order, each machine's devices in index
	// order (the numbering of the PCIe, NVLink and runs-on relations).
	GPU []float32 // [GPUs × GPUFeatures]
	// Job rows: the pending job first (when given), then the running jobs
	// machine by machine, each machine's in placement order.
	Job   []float32 // [Jobs × JobFeatures]
	JobID []int32   // workload ID of each job row
	// PendingRow is the pending job's row in Job (0), or -1 without one.
	PendingRow int
	Pending    []float32 // [JobFeatures]: the pending job's row; zeros without one
	// Mask[i] reports whether the pending job may be placed on machine i
	// now: it fits and passes the safety layer (State.Admit). All false
	// without a pending job.
	Mask    []bool
	Global  []float32 // [GlobalFeatures]
	History []float32 // [Machines × HistoryLen × HistoryChannels], oldest step first
	Edges   [NumRelations]Edges

	// Cache keys. Static parts depend on the cluster only; machine and
	// GPU rows on the machine's State.Ver within one (time, field,
	// history) stamp, so the refreshes of one tick's decisions only
	// rewrite the machines that a placement touched.
	cluster   *Cluster
	sim       *Sim
	fresh     bool
	now       float64
	field     *Field
	fieldTick int
	histSeq   uint64
	histOK    bool
	ver       []uint32
	fragVer   []uint32
	frag      []float64
	vocab     []int8 // cluster model index -> model column, for static GPU rows
	peers     []int32
	req       Request
	jobPrev   []float32 // the previous refresh's job rows (double buffer)
	idPrev    []int32
	runsPrev  [2]Edges // the previous refresh's runs-on edges
	jobsOK    bool
	jobOff    []int32  // per machine: row of its first job in jobPrev
	jobVer    []uint32 // per machine: Ver its job rows were written at
	emOff     []int32  // per machine: first runs-on-machine edge in runsPrev
	egOff     []int32  // per machine: first runs-on-GPU edge in runsPrev
	egLen     []int32  // per machine: its runs-on-GPU edges
	prio      []float32
	prioGen   []uint64
	gen       uint64 // refresh counter, the key of prio
	totCPU    int64  // cluster capacity, up or not
	totGPU    int64
}

func obsGrow[T any](b []T, n int) []T {
	if cap(b) < n {
		// Per-machine rows that a sparse refresh reads and writes at
		// random: on huge pages when large (see hugeSlice).
		return hugeSlice[T](n)
	}
	return b[:n]
}

func b2f(b bool) float32 {
	if b {
		return 1
	}
	return 0
}

// logTime maps a duration in seconds to ln(1 + s/60)/8 (about 0.9 at one
// day): durations span seconds to days, and a network wants them O(1).
func logTime(s float64) float32 {
	return float32(math.Log1p(max(0, s)/obsTimeScale) / obsTimeLog)
}

func clip1(x float64) float64 { return max(-1, min(1, x)) }

// FillTensors refreshes t for the job being decided, from the simulation
// behind o. It reports false outside a simulation (o.TEG is nil), where
// there is nothing to observe.
func (o *Observation) FillTensors(t *Tensors) bool {
	if o.TEG == nil || o.TEG.sim == nil {
		return false
	}
	o.TEG.sim.Observe(t, o.Job)
	return true
}

// Observe refreshes t from the simulation's current state, with pending as
// the job to be decided (nil: none; the mask is then all false). pending
// need not be queued: a job that is not (a what-if request) is described
// from its own fields, as if it had just arrived.
//
// The first Observe of a simulation starts its load history: from then on
// every tick is recorded. To have a full history at the first decision,
// call Observe once before stepping (history_valid tells how many steps
// are real).
func (s *Sim) Observe(t *Tensors, pending *Job) {
	s.hist.on = true
	if t.cluster != s.c {
		t.rebuild(s)
	}
	if t.sim != s {
		t.sim = s
		t.fresh, t.histOK, t.jobsOK = false, false, false
		for i := range t.fragVer {
			t.fragVer[i] = s.state.M[i].Ver - 1 // forces a recomputation
		}
	}
	f := s.visibleField()
	st := s.state
	// Within one stamp (same time, field and history) only placements,
	// releases and moves change anything, and each bumps its machine's
	// Ver: the refreshes between one tick's decisions rewrite just those
	// machines and their jobs.
	same := t.fresh && t.now == s.now && t.field == f && t.fieldTick == f.Tick && t.histSeq == s.hist.seq
	if same {
		for i := range s.c.Machines {
			if t.ver[i] != st.M[i].Ver {
				t.fillMachine(s, f, i)
			}
		}
	} else {
		for i := range s.c.Machines {
			t.fillMachine(s, f, i)
		}
	}
	if !t.histOK || t.histSeq != s.hist.seq {
		t.fillHistory(s)
		t.histOK, t.histSeq = true, s.hist.seq
	}
	t.gen++
	t.fillJobs(s, pending, same)
	t.fresh, t.now, t.field, t.fieldTick = true, s.now, f, f.Tick
	t.fillMask(s, pending)
	t.sparse, t.maskWide = false, true
	t.fillGlobal(s, f, pending)
}

// ObserveSparse refreshes t for pending on the machines cand only, in
// O(len(cand)) whatever the cluster size: their machine and GPU rows,
// their load history and their mask entries (every other machine's mask
// entry is false, and the other rows are stale), the pending job alone as
// in PendingOnly, and the global vector with two estimates: the GPU
// fragmentation total as of the simulator's last fragmentation sample, and
// the feasible share as admitted/draws (the share of the draws that found
// an admitting machine, as the langevin candidate draw reports it in
// TEGView.Draws). A policy that reads its candidates' rows only sees the
// same rows as after a full refresh. A later Observe refreshes everything.
func (s *Sim) ObserveSparse(t *Tensors, pending *Job, cand []int, draws int) {
	s.hist.on = true
	if t.cluster != s.c {
		t.rebuild(s)
	}
	if t.sim != s {
		t.sim = s
		for i := range t.fragVer {
			t.fragVer[i] = s.state.M[i].Ver - 1
		}
	}
	t.fresh, t.histOK, t.jobsOK = false, false, false // a full refresh starts over
	f := s.visibleField()
	st := s.state
	if t.maskWide {
		clear(t.Mask)
		t.maskWide = false
	} else {
		for _, i := range t.sparseSet {
			t.Mask[i] = false
		}
	}
	t.sparseSet = t.sparseSet[:0]
	admitted := 0
	if pending != nil {
		t.req = st.Request(pending)
	}
	for _, i := range cand {
		t.fillMachine(s, f, i)
		t.fillHistoryRow(s, i)
		if pending != nil && st.Admit(i, &t.req) {
			t.Mask[i] = true
			t.sparseSet = append(t.sparseSet, int32(i))
			admitted++
		}
	}
	t.gen++
	t.fillPendingOnly(s, pending)
	t.sparse, t.sparseFeasible = true, 0
	if draws > 0 {
		t.sparseFeasible = float32(float64(admitted) / float64(draws))
	}
	t.fillGlobal(s, f, pending)
}

// FillSparse is ObserveSparse for the job being decided, from the
// simulation behind o; false outside a simulation.
func (o *Observation) FillSparse(t *Tensors, cand []int, draws int) bool {
	if o.TEG == nil || o.TEG.sim == nil {
		return false
	}
	o.TEG.sim.ObserveSparse(t, o.Job, cand, draws)
	return true
}

// fillHistoryRow copies machine i's load history (fillHistory for one
// machine).
func (t *Tensors) fillHistoryRow(s *Sim, i int) {
	s.hist.copyRow(t.History[i*HistoryLen*HistoryChannels:(i+1)*HistoryLen*HistoryChannels], i)
}

// rebuild sizes the buffers for s's cluster and writes everything that
// depends on the cluster only.
func (t *Tensors) rebuild(s *Sim) {
	c := s.c
	n, g := len(c.Machines), c.TotalGPUs()
	t.cluster, t.sim, t.fresh, t.histOK, t.jobsOK = c, nil, false, false, false
	t.Machines, t.GPUs = n, g
	// The mask entries a sparse refresh set index the old cluster: the
	// next refresh clears the whole mask instead.
	t.sparse, t.sparseSet, t.maskWide = false, t.sparseSet[:0], true
	t.Machine = obsGrow(t.Machine, n*MachineFeatures)
	t.GPU = obsGrow(t.GPU, g*GPUFeatures)
	t.Mask = obsGrow(t.Mask, n)
	t.Global = obsGrow(t.Global, GlobalFeatures)
	t.Pending = obsGrow(t.Pending, JobFeatures)
	t.History = obsGrow(t.History, n*HistoryLen*HistoryChannels)
	t.ver = obsGrow(t.ver, n)
	t.jobOff = obsGrow(t.jobOff, n)
	t.jobVer = obsGrow(t.jobVer, n)
	t.emOff = obsGrow(t.emOff, n)
	t.egOff = obsGrow(t.egOff, n)
	t.egLen = obsGrow(t.egLen, n)
	t.fragVer = obsGrow(t.fragVer, n)
	t.frag = obsGrow(t.frag, n)
	clear(t.Machine)
	clear(t.GPU)
	clear(t.frag)

	t.vocab = obsGrow(t.vocab, len(c.Models))
	for k, name := range c.Models {
		t.vocab[k] = int8(gpuModelOther)
		if v := slices.Index(gpuModelVocab[:], name); v >= 0 {
			t.vocab[k] = int8(v)
		}
	}
	gi := 0
	t.totCPU, t.totGPU = 0, 0
	for i := range c.Machines {
		m := &c.Machines[i]
		t.totCPU += m.CPU
		t.totGPU += int64(m.GPUs * MilliGPU)
		row := t.Machine[i*MachineFeatures : (i+1)*MachineFeatures]
		row[mCPUCap] = float32(float64(m.CPU) / obsCPUNorm)
		row[mMemCap] = float32(float64(m.Mem) / obsMemNorm)
		row[mGPUCap] = float32(float64(m.GPUs) / obsGPUsNorm)
		row[mRackUplink] = float32(c.Racks[m.Rack].UplinkGbps / obsBwNorm)
		model := gpuModelOther
		if k := c.ModelIndex(m.GPUModel); k >= 0 {
			model = int(t.vocab[k])
		}
		for j := 0; j < m.GPUs; j++ {
			gr := t.GPU[gi*GPUFeatures : (gi+1)*GPUFeatures]
			gr[gGroup] = float32(m.GPUGroup[j])
			gr[gNUMA] = float32(m.GPUNUMA[j])
			gr[gModel+model] = 1
			gi++
		}
	}
	t.buildNetwork(c)
	t.buildGPUEdges(c)
}

// buildNetwork writes the network relation: every machine to the other
// machines of its rack (a clique, or a circulant graph in racks larger
// than obsMaxRackPeers+1), and rails: machine p of a rack to machine p of
// the other racks of its leaf (at most obsMaxRailPeers, the nearest in
// rack order), which carry messages across racks in one hop without
// rack nodes. Features are the path's bandwidth and latency.
func (t *Tensors) buildNetwork(c *Cluster) {
	pos := make([]int, len(c.Machines))
	for r := range c.Racks {
		for p, m := range c.Racks[r].Machines {
			pos[m] = p
		}
	}
	leafRacks := make([][]int, len(c.Leaves))
	rackIdx := make([]int, len(c.Racks)) // position of a rack in its leaf
	for r := range c.Racks {
		l := c.Racks[r].Leaf
		rackIdx[r] = len(leafRacks[l])
		leafRacks[l] = append(leafRacks[l], r)
	}
	e := &t.Edges[RelNetwork]
	e.Src, e.Dst, e.Feat = e.Src[:0], e.Dst[:0], e.Feat[:0]
	for a := range c.Machines {
		r := c.Machines[a].Rack
		rk := c.Racks[r].Machines
		p := pos[a]
		peers := t.peers[:0]
		if k := len(rk); k-1 <= obsMaxRackPeers {
			for _, b := range rk {
				if b != a {
					peers = append(peers, int32(b))
				}
			}
		} else {
			for d := 1; d <= obsMaxRackPeers/2; d++ {
				peers = append(peers, int32(rk[(p+d)%k]), int32(rk[(p-d+k)%k]))
			}
		}
		lr := leafRacks[c.Racks[r].Leaf]
		add := func(r2 int) {
			if m2 := c.Racks[r2].Machines; p < len(m2) {
				peers = append(peers, int32(m2[p]))
			}
		}
		if k := len(lr); k-1 <= obsMaxRailPeers {
			for _, r2 := range lr {
				if r2 != r {
					add(r2)
				}
			}
		} else {
			q := rackIdx[r]
			for d := 1; d <= obsMaxRailPeers/2; d++ {
				add(lr[(q+d)%k])
				add(lr[(q-d+k)%k])
			}
		}
		slices.Sort(peers)
		t.peers = peers
		for _, b := range peers {
			e.Src = append(e.Src, int32(a))
			e.Dst = append(e.Dst, b)
			e.Feat = append(e.Feat,
				float32(c.BandwidthGbps(a, int(b))/obsBwNorm),
				float32(c.LatencyUs(a, int(b))/obsLatNorm),
				b2f(c.Machines[b].Rack == r))
		}
	}
}

// buildGPUEdges writes the PCIe relation (each GPU to its machine) and
// the NVLink/NUMA relation: every ordered pair of distinct GPUs of one
// machine, with whether they share an NVLink group and a NUMA socket. Pairs
// across groups are kept because a gang spanning them is what the gang
// penalty and the contention model punish.
func (t *Tensors) buildGPUEdges(c *Cluster) {
	pe, nv := &t.Edges[RelPCIe], &t.Edges[RelNVLink]
	pe.Src, pe.Dst, pe.Feat = pe.Src[:0], pe.Dst[:0], pe.Feat[:0]
	nv.Src, nv.Dst, nv.Feat = nv.Src[:0], nv.Dst[:0], nv.Feat[:0]
	base := int32(0)
	for i := range c.Machines {
		m := &c.Machines[i]
		for a := 0; a < m.GPUs; a++ {
			pe.Src = append(pe.Src, base+int32(a))
			pe.Dst = append(pe.Dst, int32(i))
			pe.Feat = append(pe.Feat, float32(m.GPUNUMA[a]))
			for b := 0; b < m.GPUs; b++ {
				if b == a {
					continue
				}
				nv.Src = append(nv.Src, base+int32(a))
				nv.Dst = append(nv.Dst, base+int32(b))
				nv.Feat = append(nv.Feat, b2f(m.GPUGroup[a] == m.GPUGroup[b]), b2f(m.GPUNUMA[a] == m.GPUNUMA[b]))
			}
		}
		base += int32(m.GPUs)
	}
}

// fillMachine rewrites machine i's dynamic columns (all but cold, which
// follows the field) and its GPUs' rows.
func (t *Tensors) fillMachine(s *Sim, f *Field, i int) {
	st := s.state
	// The capacities come from the machine's hot record, which the
	// candidate checks have just loaded, not from Cluster.Machines (one
	// more cache miss per candidate on a large cluster); same values.
	ms := &s.ld.hot[i].machStatic
	row := t.Machine[i*MachineFeatures : (i+1)*MachineFeatures]
	up := st.M[i].Up
	row[mUp] = b2f(up)
	row[mCPUAlloc] = float32(1 - float64(st.M[i].FreeCPU)/ms.cpu)
	row[mMemAlloc] = float32(1 - float64(st.M[i].FreeMem)/ms.mem)
	row[mGPUAlloc], row[mFrag] = 0, 0
	if t.fragVer[i] != st.M[i].Ver {
		t.frag[i] = st.MachineFrag(i)
		t.fragVer[i] = st.M[i].Ver
	}
	if ms.gpus > 0 {
		capG := float64(int(ms.gpus) * MilliGPU)
		row[mGPUAlloc] = float32(1 - float64(st.M[i].IdleGPU)/capG)
		row[mFrag] = float32(t.frag[i] / capG)
	}
	row[mGPUFullFree] = float32(float64(st.M[i].FullFree) / obsGPUsNorm)
	row[mCPUUse] = float32(s.ld.cpuUse[i] / ms.cpu)
	row[mMemUse] = float32(s.memUsage(i) / ms.mem)
	row[mPower] = 0
	if ms.peakW > 0 {
		row[mPower] = float32(s.ld.power[i] / ms.peakW)
	}
	row[mMemBarrier] = float32(clip1(s.memHeadroom(i) / ms.mem))
	row[mJobs] = float32(float64(st.M[i].njobs) / obsJobsNorm)
	row[mPotential] = 0
	if v := f.V[i]; up && v != unreachable {
		row[mPotential] = float32(math.Log1p(max(0, float64(v))))
	}
	row[mCold] = b2f(f.isCold(i))
	row[mRackCongestion] = f.Kappa[ms.rack]
	row[mRackPower] = f.Pi[ms.rack]
	t.ver[i] = st.M[i].Ver

	base := int(st.gpuBase[i])
	for j, free := range st.GPUs(i) {
		g := t.GPU[(base+j)*GPUFeatures : (base+j+1)*GPUFeatures]
		g[gFree] = float32(free) / MilliGPU
		g[gIdle] = b2f(free == MilliGPU)
		g[gSharers] = float32(float64(st.GPUUsers[base+j]) / obsSharersNorm)
		g[gMachineUp] = b2f(up)
	}
}

// fillHistory copies the simulation's load ring into t.History, oldest
// step first; steps not yet recorded (the first ticks of a run) are zero
// at the front, so the newest step is always the last.
func (t *Tensors) fillHistory(s *Sim) {
	const C = HistoryChannels
	for i := range s.c.Machines {
		s.hist.copyRow(t.History[i*HistoryLen*C:(i+1)*HistoryLen*C], i)
	}
}

// fillJobs writes the job rows (pending first, then the running jobs) and
// the runs-on relations. With same, the rows and edges of a machine whose
// Ver has not moved since the last refresh are copied from it (they change
// only with time, which has not moved either): the refreshes between one
// tick's decisions then cost a copy, not a walk over every job record.
func (t *Tensors) fillJobs(s *Sim, pending *Job, same bool) {
	if t.PendingOnly {
		t.fillPendingOnly(s, pending)
		return
	}
	n := s.nrunning
	t.PendingRow = -1
	if pending != nil {
		n++
	}
	same = same && t.jobsOK
	// Double buffers: the previous refresh's rows, IDs and edges become
	// the source of the copies.
	prevJob, prevID := t.Job, t.JobID
	t.Job, t.jobPrev = obsGrow(t.jobPrev, n*JobFeatures), prevJob
	t.JobID, t.idPrev = obsGrow(t.idPrev, n), prevID
	em, eg := &t.Edges[RelRunsOnMachine], &t.Edges[RelRunsOnGPU]
	pm, pg := t.runsPrev[0], t.runsPrev[1]
	t.runsPrev[0], t.runsPrev[1] = *em, *eg
	em.Src, em.Dst, em.Feat = pm.Src[:0], pm.Dst[:0], pm.Feat[:0]
	eg.Src, eg.Dst, eg.Feat = pg.Src[:0], pg.Dst[:0], pg.Feat[:0]
	pm, pg = t.runsPrev[0], t.runsPrev[1]
	t.Jobs = n
	clear(t.Pending)
	row := 0
	if pending != nil {
		var rec *jobRec
		if id := pending.ID; id >= 0 && id < len(s.jobs) && s.jobs[id].state == queued {
			rec = &s.jobs[id]
		}
		t.fillJob(s, t.Job[:JobFeatures], pending, rec)
		copy(t.Pending, t.Job[:JobFeatures])
		t.JobID[0] = int32(pending.ID)
		t.PendingRow = 0
		row = 1
	}
	st := s.state
	for i := range s.onMach {
		list := s.onMach[i]
		k := len(list)
		emOff, egOff := int32(len(em.Src)), int32(len(eg.Src))
		if same && t.jobVer[i] == st.M[i].Ver {
			off, shift := int(t.jobOff[i]), int32(row)-t.jobOff[i]
			copy(t.Job[row*JobFeatures:(row+k)*JobFeatures], prevJob[off*JobFeatures:(off+k)*JobFeatures])
			copy(t.JobID[row:row+k], prevID[off:off+k])
			a, b := int(t.emOff[i]), int(t.emOff[i])+k
			for _, src := range pm.Src[a:b] {
				em.Src = append(em.Src, src+shift)
			}
			em.Dst = append(em.Dst, pm.Dst[a:b]...)
			em.Feat = append(em.Feat, pm.Feat[a*runsOnMachineFeatures:b*runsOnMachineFeatures]...)
			a, b = int(t.egOff[i]), int(t.egOff[i]+t.egLen[i])
			for _, src := range pg.Src[a:b] {
				eg.Src = append(eg.Src, src+shift)
			}
			eg.Dst = append(eg.Dst, pg.Dst[a:b]...)
			eg.Feat = append(eg.Feat, pg.Feat[a:b]...)
		} else {
			m := &s.c.Machines[i]
			for q, id := range list {
				rec := &s.jobs[id]
				j := &s.w.Jobs[id]
				r := row + q
				t.fillJob(s, t.Job[r*JobFeatures:(r+1)*JobFeatures], j, rec)
				t.JobID[r] = id
				gs := 0.0
				if m.GPUs > 0 {
					gs = float64(j.GPUDemand()) / float64(m.GPUs*MilliGPU)
				}
				em.Src = append(em.Src, int32(r))
				em.Dst = append(em.Dst, int32(i))
				em.Feat = append(em.Feat, float32(float64(j.CPU)/float64(m.CPU)), float32(float64(j.Mem)/float64(m.Mem)), float32(gs))
				for mask := rec.alloc.GPUMask; mask != 0; mask &= mask - 1 {
					eg.Src = append(eg.Src, int32(r))
					eg.Dst = append(eg.Dst, st.gpuBase[i]+int32(bits.TrailingZeros32(mask)))
					eg.Feat = append(eg.Feat, float32(rec.alloc.Milli)/MilliGPU)
				}
			}
		}
		t.jobOff[i], t.jobVer[i] = int32(row), st.M[i].Ver
		t.emOff[i], t.egOff[i], t.egLen[i] = emOff, egOff, int32(len(eg.Src))-egOff
		row += k
	}
	t.jobsOK = true
}

// priority is tenant k's token priority 2^(-B_k/S_k), computed once per
// refresh: tenants are few, jobs many.
func (t *Tensors) priority(s *Sim, k int) float32 {
	if k >= len(t.prio) {
		t.prio = append(t.prio, make([]float32, k+1-len(t.prio))...)
		t.prioGen = append(t.prioGen, make([]uint64, k+1-len(t.prioGen))...)
	}
	if t.prioGen[k] != t.gen {
		t.prio[k] = float32(math.Exp2(-s.tok.bal[k] / s.tok.share()))
		t.prioGen[k] = t.gen
	}
	return t.prio[k]
}

// fillJob writes one job row. rec is the job's record when it is running
// or queued in s; nil describes j as if it had just arrived.
func (t *Tensors) fillJob(s *Sim, row []float32, j *Job, rec *jobRec) {
	clear(row)
	now := s.now
	row[jCPU] = float32(float64(j.CPU) / obsCPUNorm)
	row[jMem] = float32(float64(j.Mem) / obsMemNorm)
	row[jGPU] = float32(float64(j.GPUDemand()) / obsGPUNorm)
	row[jGPUs] = float32(float64(j.GPUs) / obsGPUsNorm)
	row[jGPUMilli] = float32(j.GPUMilli) / MilliGPU
	row[jShare] = b2f(j.IsShare())
	if j.Kind <= Service {
		row[jKindBatch+int(j.Kind)] = 1
	}
	if j.QoS <= LatencySensitive {
		row[jQoSBE+int(j.QoS)] = 1
	}
	row[jAge] = logTime(now - j.Arrival)
	if j.Deadline > 0 {
		row[jHasDeadline] = 1
		row[jDeadlineSlack] = float32(clip1((j.Arrival + j.Deadline - now) / j.Deadline))
	}
	row[jMigratable] = b2f(j.Migratable)
	row[jReplica] = b2f(j.Service >= 0)
	row[jNet] = float32(j.NetGbps / obsNetNorm)
	row[jModelConstrained] = b2f(j.GPUs > 0 && len(j.GPUModels) > 0)

	tenant := -1
	switch {
	case rec == nil:
		row[jWorkLeft] = logTime(j.Duration)
		row[jPhaseTime] = logTime(now - j.Arrival)
		if k, ok := s.tok.tenants[j.Tenant]; ok {
			tenant = k
		}
	case rec.state == running:
		work := rec.work
		if now > rec.mark {
			work = max(0, work-rec.rate*(now-rec.mark))
		}
		row[jRunning] = 1
		row[jMigrating] = b2f(now < rec.mark)
		row[jWorkLeft] = logTime(work)
		row[jRate] = float32(rec.rate)
		row[jPhaseTime] = logTime(now - rec.start)
		row[jRestarts] = float32(float64(rec.restarts) / obsRestarts)
		row[jCPUUse] = float32(rec.use.cpu)
		row[jMemUse] = float32(rec.use.frac(now))
		tenant = int(rec.tenant)
	default: // queued
		row[jWorkLeft] = logTime(rec.work)
		row[jPhaseTime] = logTime(now - rec.queuedAt)
		row[jRestarts] = float32(float64(rec.restarts) / obsRestarts)
		tenant = int(rec.tenant)
	}
	row[jPriority] = 1
	if s.teg.Tokens && tenant >= 0 {
		row[jPriority] = t.priority(s, tenant)
	}
}

// fillMask evaluates the safety layer's admission filter for the pending
// job on every machine.
func (t *Tensors) fillMask(s *Sim, pending *Job) {
	if pending == nil {
		clear(t.Mask)
		return
	}
	st := s.state
	// The request lives in t: the safety layer is a func value, through
	// which a local would escape to the heap on every refresh.
	t.req = st.Request(pending)
	for i := range t.Mask {
		t.Mask[i] = st.Admit(i, &t.req)
	}
}

func (t *Tensors) fillGlobal(s *Sim, f *Field, pending *Job) {
	g := t.Global
	clear(g)
	st := s.state
	cfg := &s.teg
	n := float64(len(s.c.Machines))
	cs := s.ctl.stats()
	if cfg.DMax > 0 {
		g[oDamping] = float32(s.ctl.d / cfg.DMax)
		g[oDampingTarget] = float32(cs.Target / cfg.DMax)
	}
	g[oDampingOverridden] = b2f(s.ctl.overridden)
	g[oTemperature] = float32(s.view.Temperature() / obsGamma0)
	g[oPhi] = float32(cs.Phi)
	g[oPhiMean] = float32(cs.Mean)
	g[oPhiVar] = float32(cs.Var)
	g[oChi] = float32(cs.Chi)
	g[oPhiLag1] = float32(cs.Lag1)
	g[oQueue] = float32(math.Log1p(float64(s.tq.n)) / obsQueueLog)
	g[oQueuePerMachine] = float32(float64(s.tq.n) / n)
	g[oRunningPerMachine] = float32(float64(s.nrunning) / n / obsJobsNorm)
	if b := s.tok.SupplyBound(); b > 0 && !math.IsInf(b, 0) {
		g[oTokenSupply] = float32(s.tok.supply() / b)
	}
	frag := 0.0
	if t.sparse {
		frag = s.frag // the total as of the last fragmentation sample
	} else {
		for i := range t.frag {
			if st.M[i].Up {
				frag += t.frag[i]
			}
		}
	}
	if st.CapCPU > 0 {
		g[oUtilCPU] = float32(float64(st.UsedCPU) / float64(st.CapCPU))
	}
	if st.CapMem > 0 {
		g[oUtilMem] = float32(float64(st.UsedMem) / float64(st.CapMem))
	}
	if st.CapGPU > 0 {
		g[oUtilGPU] = float32(float64(st.UsedGPU) / float64(st.CapGPU))
		g[oGPUFrag] = float32(frag / float64(st.CapGPU))
	}
	g[oUpCPU] = float32(float64(st.CapCPU) / float64(t.totCPU))
	if t.totGPU > 0 {
		g[oUpGPU] = float32(float64(st.CapGPU) / float64(t.totGPU))
	}
	if s.peak > 0 {
		g[oPower] = float32(s.power / s.peak)
	}
	day := 2 * math.Pi * math.Mod(s.now, obsDay) / obsDay
	g[oTimeSin] = float32(math.Sin(day))
	g[oTimeCos] = float32(math.Cos(day))
	g[oSimTime] = float32(s.now / obsDay)
	r := s.lastReward
	g[oReward], g[oRewardSuccess], g[oRewardEnergy], g[oRewardLatency] = float32(r.Total), float32(r.Success), float32(r.Energy), float32(r.Latency)
	g[oFieldAge] = float32(float64(s.ticks-f.Tick) / float64(cfg.FieldEvery+cfg.Staleness))
	g[oHistoryValid] = float32(s.hist.count) / HistoryLen
	if pending != nil {
		g[oPending] = 1
		if t.sparse {
			g[oFeasible] = t.sparseFeasible
			return
		}
		k := 0
		for _, ok := range t.Mask {
			if ok {
				k++
			}
		}
		g[oFeasible] = float32(float64(k) / n)
	}
}

// loadHistory is the ring of the machines' last HistoryLen load frames,
// written once per tick by Step (recordHistory) without allocating. It is
// off until the simulation is first observed: runs that nobody observes
// (baselines, sweeps, benchmarks) do not pay for it.
type loadHistory struct {
	on bool
	// buf is machine-major, [machines × HistoryLen frames × channels]
	// (frame f of machine i at (i·HistoryLen + f)·HistoryChannels): a
	// policy reads its candidates' histories, and one machine's are then
	// five cache lines instead of one line in each of twelve frames.
	buf   []float32
	inv   []float64 // per machine: 1/CPU, 1/Mem, 1/GPU milli (0 without), 1/peak W
	head  int       // frame written next
	count int       // frames recorded, at most HistoryLen
	tick  int       // tick of the newest frame
	seq   uint64    // recordHistory calls; Tensors key their copy on it
}

// copyRow writes machine i's history into dst ([HistoryLen × channels]),
// oldest step first, zeros for the steps not yet recorded.
func (h *loadHistory) copyRow(dst []float32, i int) {
	const C = HistoryChannels
	pad := HistoryLen - h.count
	clear(dst[:pad*C])
	if h.count == 0 {
		return
	}
	row := h.buf[i*HistoryLen*C : (i+1)*HistoryLen*C]
	// The recorded frames run from head-count to head-1 around the ring:
	// at most two contiguous pieces.
	first := (h.head - h.count + HistoryLen) % HistoryLen
	end := first + h.count
	k := copy(dst[pad*C:], row[first*C:min(HistoryLen, end)*C])
	if end > HistoryLen {
		copy(dst[pad*C+k:], row[:(end-HistoryLen)*C])
	}
}

// recordHistory appends the current load of every machine to the history
// ring. Step calls it once, at the end of every tick; it records from the
// first Observe on. Ticks that Step
// skipped because nothing but time could change (skipIdle) repeat the
// newest frame, so the ring always holds consecutive ticks; only memory
// in use, which grows with time, is held at its last value over them.
func (s *Sim) recordHistory() {
	h := &s.hist
	if !h.on {
		return
	}
	n := len(s.c.Machines)
	const C = HistoryChannels
	stride := n * C
	if h.buf == nil {
		h.buf = hugeSlice[float32](HistoryLen * stride) // read at random by sparse refreshes
		h.inv = make([]float64, 4*n)
		for i := range s.c.Machines {
			m := &s.c.Machines[i]
			h.inv[4*i], h.inv[4*i+1] = 1/float64(m.CPU), 1/float64(m.Mem)
			if m.GPUs > 0 {
				h.inv[4*i+2] = 1 / float64(m.GPUs*MilliGPU)
			}
			if m.PeakW > 0 {
				h.inv[4*i+3] = 1 / m.PeakW
			}
		}
	}
	if h.count > 0 {
		prev := (h.head - 1 + HistoryLen) % HistoryLen
		for gap := min(s.ticks-h.tick-1, HistoryLen); gap > 0; gap-- {
			for i := 0; i < n; i++ {
				row := h.buf[i*HistoryLen*C : (i+1)*HistoryLen*C]
				dst, src := row[h.head*C:][:C], row[prev*C:][:C]
				for c := range dst {
					dst[c] = src[c]
				}
			}
			prev = h.head
			h.head = (h.head + 1) % HistoryLen
			h.count = min(h.count+1, HistoryLen)
		}
	}
	st := s.state
	for i := 0; i < n; i++ {
		inv := h.inv[4*i : 4*i+4]
		m := &s.c.Machines[i]
		out := h.buf[(i*HistoryLen+h.head)*C:][:C]
		out[hCPUAlloc] = float32(float64(m.CPU-st.M[i].FreeCPU) * inv[0])
		out[hMemAlloc] = float32(float64(m.Mem-st.M[i].FreeMem) * inv[1])
		out[hGPUAlloc] = float32(float64(int64(m.GPUs*MilliGPU)-int64(st.M[i].IdleGPU)) * inv[2])
		out[hCPUUse] = float32(s.ld.cpuUse[i] * inv[0])
		out[hMemUse] = float32(s.memUsage(i) * inv[1])
		out[hPower] = float32(s.ld.power[i] * inv[3])
	}
	h.head = (h.head + 1) % HistoryLen
	h.count = min(h.count+1, HistoryLen)
	h.tick = s.ticks
	h.seq++
}
