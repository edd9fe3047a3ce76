package datasets

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/tegrl/tegrl/env"
)

// Transition is one scheduling decision: the observation the policy saw,
// the action it took, the reward accrued from this decision until the
// next one, and what the behaviour policy said about it (for off-policy
// corrections). One row of a transitions file.
type Transition struct {
	RunID   string
	Episode int32
	Step    int64   // decision index within the episode, from 0
	Time    float64 // simulated seconds at the decision
	JobID   int32   // workload ID of the job decided (-1: none)
	// Obs holds the observation's exported fields only. Fill it with
	// CopyTensors from a live env.Tensors: assigning one would share the
	// buffers that the next refresh rewrites.
	Obs    env.Tensors
	Action env.Action
	// Reward is the reward accrued from this decision until the next one
	// (the sum of the ticks' rewards and of their terms).
	Reward env.RewardTerms
	Done   bool // last transition of the episode
	// BehaviourLogp is log π(action | obs) of the policy that acted, Value
	// its value estimate, PolicyVersion its version; all 0 for
	// non-learned schedulers.
	BehaviourLogp float32
	Value         float32
	PolicyVersion uint64
}

// CopyTensors copies src's exported fields into dst, reusing dst's
// buffers. dst's unexported caches are left alone: dst is a value to
// store, not one to refresh with Sim.Observe.
func CopyTensors(dst, src *env.Tensors) {
	dst.Machines, dst.GPUs, dst.Jobs, dst.PendingRow = src.Machines, src.GPUs, src.Jobs, src.PendingRow
	dst.Machine = append(dst.Machine[:0], src.Machine...)
	dst.GPU = append(dst.GPU[:0], src.GPU...)
	dst.Job = append(dst.Job[:0], src.Job...)
	dst.JobID = append(dst.JobID[:0], src.JobID...)
	dst.Pending = append(dst.Pending[:0], src.Pending...)
	dst.Mask = append(dst.Mask[:0], src.Mask...)
	dst.Global = append(dst.Global[:0], src.Global...)
	dst.History = append(dst.History[:0], src.History...)
	for r := range src.Edges {
		e, s := &dst.Edges[r], &src.Edges[r]
		e.Src = append(e.Src[:0], s.Src...)
		e.Dst = append(e.Dst[:0], s.Dst...)
		e.Feat = append(e.Feat[:0], s.Feat...)
	}
}

// viewTensors points dst's exported fields at src's buffers (no copy).
func viewTensors(dst, src *env.Tensors) {
	dst.Machines, dst.GPUs, dst.Jobs, dst.PendingRow = src.Machines, src.GPUs, src.Jobs, src.PendingRow
	dst.Machine, dst.GPU, dst.Job, dst.JobID = src.Machine, src.GPU, src.Job, src.JobID
	dst.Pending, dst.Mask, dst.Global, dst.History = src.Pending, src.Mask, src.Global, src.History
	for r := range src.Edges {
		dst.Edges[r] = env.Edges{Src: src.Edges[r].Src, Dst: src.Edges[r].Dst, Feat: src.Edges[r].Feat}
	}
}

// Clone returns a deep copy of t.
func (t *Transition) Clone() Transition {
	c := *t
	c.Obs = env.Tensors{}
	CopyTensors(&c.Obs, &t.Obs)
	return c
}

// Equal reports whether t and u hold the same values, floats compared bit
// for bit (so a NaN damping equals itself) and nil slices equal to empty
// ones.
func (t *Transition) Equal(u *Transition) bool {
	a, b := &t.Obs, &u.Obs
	if t.RunID != u.RunID || t.Episode != u.Episode || t.Step != u.Step || !sameF64(t.Time, u.Time) || t.JobID != u.JobID ||
		t.Done != u.Done || !sameF32(t.BehaviourLogp, u.BehaviourLogp) || !sameF32(t.Value, u.Value) || t.PolicyVersion != u.PolicyVersion {
		return false
	}
	if t.Action.Node != u.Action.Node || t.Action.GPU != u.Action.GPU || t.Action.ReplicaDelta != u.Action.ReplicaDelta ||
		!sameF32(t.Action.Affinity, u.Action.Affinity) || !sameF32(t.Action.Damping, u.Action.Damping) {
		return false
	}
	r, s := t.Reward, u.Reward
	if !sameF64(r.Total, s.Total) || !sameF64(r.Success, s.Success) || !sameF64(r.Energy, s.Energy) || !sameF64(r.Latency, s.Latency) {
		return false
	}
	if a.Machines != b.Machines || a.GPUs != b.GPUs || a.Jobs != b.Jobs || a.PendingRow != b.PendingRow {
		return false
	}
	if !slices.EqualFunc(a.Machine, b.Machine, sameF32) || !slices.EqualFunc(a.GPU, b.GPU, sameF32) || !slices.EqualFunc(a.Job, b.Job, sameF32) || !slices.EqualFunc(a.Pending, b.Pending, sameF32) ||
		!slices.EqualFunc(a.Global, b.Global, sameF32) || !slices.EqualFunc(a.History, b.History, sameF32) || !slices.Equal(a.JobID, b.JobID) || !slices.Equal(a.Mask, b.Mask) {
		return false
	}
	for r := range a.Edges {
		if !slices.Equal(a.Edges[r].Src, b.Edges[r].Src) || !slices.Equal(a.Edges[r].Dst, b.Edges[r].Dst) || !slices.EqualFunc(a.Edges[r].Feat, b.Edges[r].Feat, sameF32) {
			return false
		}
	}
	return true
}

func sameF64(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
func sameF32(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }

// Transitions columns, in file order (docs/datasets.md). The edge columns
// follow tcEdges, three per relation (src, dst, feat), in env.Relation
// order; the action and reward columns follow them.
const (
	tcRunID = iota
	tcEpisode
	tcStep
	tcTime
	tcJobID
	tcMachines
	tcGPUs
	tcJobs
	tcMachine
	tcGPU
	tcJob
	tcJobIDs
	tcPendingRow
	tcPending
	tcMask
	tcGlobal
	tcHistory
	tcEdges
)

const (
	tcNode = tcEdges + 3*env.NumRelations + iota
	tcGPUIndex
	tcReplicaDelta
	tcAffinity
	tcDamping
	tcReward
	tcRewardSuccess
	tcRewardEnergy
	tcRewardLatency
	tcDone
	tcLogp
	tcValue
	tcPolicyVersion
	tcColumns
)

func edgeColumn(r env.Relation, part string) string { return "obs_edge_" + r.String() + "_" + part }

// TransitionsSchema is the schema of a transitions file (without its
// metadata).
var TransitionsSchema = func() *arrow.Schema {
	f32s := arrow.ListOfNonNullable(arrow.PrimitiveTypes.Float32)
	i32s := arrow.ListOfNonNullable(arrow.PrimitiveTypes.Int32)
	fields := make([]arrow.Field, tcColumns)
	set := func(i int, name string, t arrow.DataType) { fields[i] = arrow.Field{Name: name, Type: t} }
	set(tcRunID, "run_id", arrow.BinaryTypes.String)
	set(tcEpisode, "episode", arrow.PrimitiveTypes.Int32)
	set(tcStep, "step", arrow.PrimitiveTypes.Int64)
	set(tcTime, "time_s", arrow.PrimitiveTypes.Float64)
	set(tcJobID, "job_id", arrow.PrimitiveTypes.Int32)
	set(tcMachines, "obs_machines", arrow.PrimitiveTypes.Int32)
	set(tcGPUs, "obs_gpus", arrow.PrimitiveTypes.Int32)
	set(tcJobs, "obs_jobs", arrow.PrimitiveTypes.Int32)
	set(tcMachine, "obs_machine", f32s)
	set(tcGPU, "obs_gpu", f32s)
	set(tcJob, "obs_job", f32s)
	set(tcJobIDs, "obs_job_id", i32s)
	set(tcPendingRow, "obs_pending_row", arrow.PrimitiveTypes.Int32)
	set(tcPending, "obs_pending", f32s)
	set(tcMask, "obs_mask", arrow.ListOfNonNullable(arrow.FixedWidthTypes.Boolean))
	set(tcGlobal, "obs_global", f32s)
	set(tcHistory, "obs_history", f32s)
	for r := env.Relation(0); r < env.NumRelations; r++ {
		set(tcEdges+3*int(r), edgeColumn(r, "src"), i32s)
		set(tcEdges+3*int(r)+1, edgeColumn(r, "dst"), i32s)
		set(tcEdges+3*int(r)+2, edgeColumn(r, "feat"), f32s)
	}
	set(tcNode, "action_node", arrow.PrimitiveTypes.Int32)
	set(tcGPUIndex, "action_gpu", arrow.PrimitiveTypes.Int32)
	set(tcReplicaDelta, "action_replica_delta", arrow.PrimitiveTypes.Int32)
	set(tcAffinity, "action_affinity", arrow.PrimitiveTypes.Float32)
	set(tcDamping, "action_damping", arrow.PrimitiveTypes.Float32)
	set(tcReward, "reward", arrow.PrimitiveTypes.Float64)
	set(tcRewardSuccess, "reward_success", arrow.PrimitiveTypes.Float64)
	set(tcRewardEnergy, "reward_energy", arrow.PrimitiveTypes.Float64)
	set(tcRewardLatency, "reward_latency", arrow.PrimitiveTypes.Float64)
	set(tcDone, "done", arrow.FixedWidthTypes.Boolean)
	set(tcLogp, "behaviour_logp", arrow.PrimitiveTypes.Float32)
	set(tcValue, "value", arrow.PrimitiveTypes.Float32)
	set(tcPolicyVersion, "policy_version", arrow.PrimitiveTypes.Uint64)
	return arrow.NewSchema(fields, nil)
}()

// Shape metadata keys of a transitions file: the observation's feature
// counts (env's constants when the file was written). A reader checks
// them against its own.
const (
	MetaMachineFeatures = "tegrl.machine_features"
	MetaGPUFeatures     = "tegrl.gpu_features"
	MetaJobFeatures     = "tegrl.job_features"
	MetaGlobalFeatures  = "tegrl.global_features"
	MetaHistoryLen      = "tegrl.history_len"
	MetaHistoryChannels = "tegrl.history_channels"
	// MetaEdgeFeaturesPrefix + relation name ("tegrl.edge_features.nvlink").
	MetaEdgeFeaturesPrefix = "tegrl.edge_features."
)

// shapeMetadata lists the shape keys and env's values, in file order.
func shapeMetadata() [][2]string {
	kv := [][2]string{
		{MetaMachineFeatures, strconv.Itoa(env.MachineFeatures)},
		{MetaGPUFeatures, strconv.Itoa(env.GPUFeatures)},
		{MetaJobFeatures, strconv.Itoa(env.JobFeatures)},
		{MetaGlobalFeatures, strconv.Itoa(env.GlobalFeatures)},
		{MetaHistoryLen, strconv.Itoa(env.HistoryLen)},
		{MetaHistoryChannels, strconv.Itoa(env.HistoryChannels)},
	}
	for r := env.Relation(0); r < env.NumRelations; r++ {
		kv = append(kv, [2]string{MetaEdgeFeaturesPrefix + r.String(), strconv.Itoa(env.EdgeFeatures(r))})
	}
	return kv
}

func init() {
	for _, kv := range shapeMetadata() {
		knownKeys[KindTransitions] = append(knownKeys[KindTransitions], kv[0])
	}
}

// checkTransition validates one transition: list lengths against the
// declared shapes, indices in range, finite values. It returns the column
// at fault.
func checkTransition(t *Transition) (string, error) {
	o := &t.Obs
	n, g, j := o.Machines, o.GPUs, o.Jobs
	switch {
	case t.Step < 0:
		return "step", fmt.Errorf("%d is negative", t.Step)
	case !finite(t.Time) || t.Time < 0:
		return "time_s", fmt.Errorf("%v must be finite and >= 0", t.Time)
	case t.JobID < -1:
		return "job_id", fmt.Errorf("%d < -1", t.JobID)
	case n < 0 || n > maxInt32 || g < 0 || g > maxInt32 || j < 0 || j > maxInt32:
		return "obs_machines", fmt.Errorf("node counts %d machines, %d GPUs, %d jobs outside [0, 2^31)", n, g, j)
	}
	lens := []struct {
		col       string
		got, want int
	}{
		{"obs_machine", len(o.Machine), n * env.MachineFeatures},
		{"obs_gpu", len(o.GPU), g * env.GPUFeatures},
		{"obs_job", len(o.Job), j * env.JobFeatures},
		{"obs_job_id", len(o.JobID), j},
		{"obs_pending", len(o.Pending), env.JobFeatures},
		{"obs_mask", len(o.Mask), n},
		{"obs_global", len(o.Global), env.GlobalFeatures},
		{"obs_history", len(o.History), n * env.HistoryLen * env.HistoryChannels},
	}
	for _, l := range lens {
		if l.got != l.want {
			return l.col, fmt.Errorf("%d values, the declared shape needs %d", l.got, l.want)
		}
	}
	for _, f := range []struct {
		col string
		x   []float32
	}{{"obs_machine", o.Machine}, {"obs_gpu", o.GPU}, {"obs_job", o.Job}, {"obs_pending", o.Pending},
		{"obs_global", o.Global}, {"obs_history", o.History}} {
		if k := firstNonFinite(f.x); k >= 0 {
			return f.col, fmt.Errorf("value %d is %v: features must be finite", k, f.x[k])
		}
	}
	switch {
	case o.PendingRow != -1 && o.PendingRow != 0:
		return "obs_pending_row", fmt.Errorf("%d: want 0 (the pending job's row) or -1 (none)", o.PendingRow)
	case o.PendingRow == 0 && j == 0:
		return "obs_pending_row", fmt.Errorf("0 with no job rows")
	case o.PendingRow == 0 && o.JobID[0] != t.JobID:
		return "job_id", fmt.Errorf("%d, but the pending row is job %d", t.JobID, o.JobID[0])
	}
	for _, id := range o.JobID {
		if id < 0 {
			return "obs_job_id", fmt.Errorf("negative job id %d", id)
		}
	}
	count := func(nt env.NodeType) int {
		switch nt {
		case env.NodeMachine:
			return n
		case env.NodeGPU:
			return g
		}
		return j
	}
	for r := env.Relation(0); r < env.NumRelations; r++ {
		e := &o.Edges[r]
		src, dst := r.Nodes()
		ns, nd := count(src), count(dst)
		switch {
		case len(e.Dst) != len(e.Src):
			return edgeColumn(r, "dst"), fmt.Errorf("%d destinations for %d sources", len(e.Dst), len(e.Src))
		case len(e.Feat) != len(e.Src)*env.EdgeFeatures(r):
			return edgeColumn(r, "feat"), fmt.Errorf("%d values for %d edges of %d features", len(e.Feat), len(e.Src), env.EdgeFeatures(r))
		}
		for k := range e.Src {
			if s := e.Src[k]; s < 0 || int(s) >= ns {
				return edgeColumn(r, "src"), fmt.Errorf("edge %d: source %d outside [0, %d) %ss", k, s, ns, src)
			}
			if d := e.Dst[k]; d < 0 || int(d) >= nd {
				return edgeColumn(r, "dst"), fmt.Errorf("edge %d: destination %d outside [0, %d) %ss", k, d, nd, dst)
			}
		}
		if k := firstNonFinite(e.Feat); k >= 0 {
			return edgeColumn(r, "feat"), fmt.Errorf("value %d is %v: features must be finite", k, e.Feat[k])
		}
	}
	a := &t.Action
	d := float64(a.Damping)
	switch {
	case a.Node < -1 || a.Node >= n:
		return "action_node", fmt.Errorf("%d outside [-1, %d)", a.Node, n)
	case a.GPU < -1 || a.GPU >= env.MaxGPUsPerMachine:
		return "action_gpu", fmt.Errorf("%d outside [-1, %d)", a.GPU, env.MaxGPUsPerMachine)
	case a.ReplicaDelta < -maxInt32-1 || a.ReplicaDelta > maxInt32:
		return "action_replica_delta", fmt.Errorf("%d does not fit int32", a.ReplicaDelta)
	case !finite(float64(a.Affinity)):
		return "action_affinity", fmt.Errorf("%v must be finite", a.Affinity)
	case math.IsInf(d, 0):
		return "action_damping", fmt.Errorf("%v must be finite (or NaN: the controller's)", a.Damping)
	}
	for _, v := range []struct {
		col string
		x   float64
	}{{"reward", t.Reward.Total}, {"reward_success", t.Reward.Success}, {"reward_energy", t.Reward.Energy},
		{"reward_latency", t.Reward.Latency}, {"behaviour_logp", float64(t.BehaviourLogp)}, {"value", float64(t.Value)}} {
		if !finite(v.x) {
			return v.col, fmt.Errorf("%v must be finite", v.x)
		}
	}
	return "", nil
}

// firstNonFinite returns the index of the first NaN or ±Inf in x, or -1.
func firstNonFinite(x []float32) int {
	for i, v := range x {
		// v-v is 0 for finite v, NaN for ±Inf and NaN.
		if v-v != 0 {
			return i
		}
	}
	return -1
}

// TransitionsWriter streams transitions into a transitions file.
type TransitionsWriter struct {
	bw      *batchWriter
	runID   *array.StringBuilder
	episode *array.Int32Builder
	i32     [tcColumns]*array.Int32Builder
	i64     [tcColumns]*array.Int64Builder
	f32     [tcColumns]*array.Float32Builder
	f64     [tcColumns]*array.Float64Builder
	list    [tcColumns]*array.ListBuilder
	listF32 [tcColumns]*array.Float32Builder // the lists' value builders
	listI32 [tcColumns]*array.Int32Builder
	mask    *array.BooleanBuilder
	done    *array.BooleanBuilder
	version *array.Uint64Builder
	bytes   int64 // approximate bytes of the rows appended
}

func transitionsSchema(opt *WriterOptions) *arrow.Schema {
	md := baseMetadata(KindTransitions, opt, shapeMetadata())
	return arrow.NewSchema(TransitionsSchema.Fields(), &md)
}

// NewTransitionsWriter writes a transitions file to w. Close writes the
// footer; it does not close w.
func NewTransitionsWriter(w io.Writer, opt WriterOptions) (*TransitionsWriter, error) {
	bw, err := newBatchWriter("transitions", w, transitionsSchema(&opt), opt)
	if err != nil {
		return nil, err
	}
	return newTransitionsWriter(bw), nil
}

// CreateTransitions creates the transitions file path (written to
// path.partial and renamed by a successful Close).
func CreateTransitions(path string, opt WriterOptions) (*TransitionsWriter, error) {
	bw, err := createBatchWriter(path, transitionsSchema(&opt), opt)
	if err != nil {
		return nil, err
	}
	return newTransitionsWriter(bw), nil
}

func newTransitionsWriter(bw *batchWriter) *TransitionsWriter {
	w := &TransitionsWriter{bw: bw}
	for i, b := range bw.rb.Fields() {
		switch b := b.(type) {
		case *array.Int32Builder:
			w.i32[i] = b
		case *array.Int64Builder:
			w.i64[i] = b
		case *array.Float32Builder:
			w.f32[i] = b
		case *array.Float64Builder:
			w.f64[i] = b
		case *array.ListBuilder:
			w.list[i] = b
			switch v := b.ValueBuilder().(type) {
			case *array.Float32Builder:
				w.listF32[i] = v
			case *array.Int32Builder:
				w.listI32[i] = v
			case *array.BooleanBuilder:
				w.mask = v
			}
		}
	}
	w.runID = bw.rb.Field(tcRunID).(*array.StringBuilder)
	w.episode = w.i32[tcEpisode]
	w.done = bw.rb.Field(tcDone).(*array.BooleanBuilder)
	w.version = bw.rb.Field(tcPolicyVersion).(*array.Uint64Builder)
	return w
}

// Append adds one transition; its values are copied, so t may be reused.
func (w *TransitionsWriter) Append(t *Transition) error {
	if w.bw.err != nil {
		return w.bw.err
	}
	if col, err := checkTransition(t); err != nil {
		return w.bw.fail(fmt.Errorf("%s: run %s episode %d step %d: column %s: %w", w.bw.name, t.RunID, t.Episode, t.Step, col, err))
	}
	w.bw.startRow()
	o := &t.Obs
	w.runID.Append(t.RunID)
	w.episode.Append(t.Episode)
	w.i64[tcStep].Append(t.Step)
	w.f64[tcTime].Append(t.Time)
	w.i32[tcJobID].Append(t.JobID)
	w.i32[tcMachines].Append(int32(o.Machines))
	w.i32[tcGPUs].Append(int32(o.GPUs))
	w.i32[tcJobs].Append(int32(o.Jobs))
	n := 0
	f32 := func(col int, x []float32) {
		w.list[col].Append(true)
		w.listF32[col].AppendValues(x, nil)
		n += 4 * len(x)
	}
	i32 := func(col int, x []int32) {
		w.list[col].Append(true)
		w.listI32[col].AppendValues(x, nil)
		n += 4 * len(x)
	}
	f32(tcMachine, o.Machine)
	f32(tcGPU, o.GPU)
	f32(tcJob, o.Job)
	i32(tcJobIDs, o.JobID)
	w.i32[tcPendingRow].Append(int32(o.PendingRow))
	f32(tcPending, o.Pending)
	w.list[tcMask].Append(true)
	w.mask.AppendValues(o.Mask, nil)
	n += len(o.Mask) / 8
	f32(tcGlobal, o.Global)
	f32(tcHistory, o.History)
	for r := range o.Edges {
		e := &o.Edges[r]
		i32(tcEdges+3*r, e.Src)
		i32(tcEdges+3*r+1, e.Dst)
		f32(tcEdges+3*r+2, e.Feat)
	}
	a := &t.Action
	w.i32[tcNode].Append(int32(a.Node))
	w.i32[tcGPUIndex].Append(int32(a.GPU))
	w.i32[tcReplicaDelta].Append(int32(a.ReplicaDelta))
	w.f32[tcAffinity].Append(a.Affinity)
	w.f32[tcDamping].Append(a.Damping)
	w.f64[tcReward].Append(t.Reward.Total)
	w.f64[tcRewardSuccess].Append(t.Reward.Success)
	w.f64[tcRewardEnergy].Append(t.Reward.Energy)
	w.f64[tcRewardLatency].Append(t.Reward.Latency)
	w.done.Append(t.Done)
	w.f32[tcLogp].Append(t.BehaviourLogp)
	w.f32[tcValue].Append(t.Value)
	w.version.Append(t.PolicyVersion)
	n += len(t.RunID) + 200
	w.bytes += int64(n)
	return w.bw.endRow(n)
}

// Rows is the number of transitions appended so far.
func (w *TransitionsWriter) Rows() int64 { return w.bw.total }

// Bytes is the approximate size of the rows appended so far: their
// values' bytes plus a fixed 200 a row for the scalars and offsets. The
// file adds its schema, batch headers and footer (a few kilobytes).
func (w *TransitionsWriter) Bytes() int64 { return w.bytes }

// Close flushes the last batch and writes the footer.
func (w *TransitionsWriter) Close() error { return w.bw.close() }

// TransitionsReader reads a transitions file batch by batch.
type TransitionsReader struct {
	br    *batchReader
	batch []Transition
	mask  []bool // backing store of the batch's masks
	err   error
}

// OpenTransitions opens the transitions file path.
func OpenTransitions(path string, opt ReaderOptions) (*TransitionsReader, error) {
	br, err := openPath(path, KindTransitions, TransitionsSchema, opt)
	if err != nil {
		return nil, err
	}
	if err := checkShapes(br); err != nil {
		br.close()
		return nil, err
	}
	return &TransitionsReader{br: br}, nil
}

// NewTransitionsReader reads a transitions file from r; name names it in
// errors.
func NewTransitionsReader(name string, r ReadAtSeeker, opt ReaderOptions) (*TransitionsReader, error) {
	br, err := newBatchReader(name, r, KindTransitions, TransitionsSchema, opt)
	if err != nil {
		return nil, err
	}
	if err := checkShapes(br); err != nil {
		br.close()
		return nil, err
	}
	return &TransitionsReader{br: br}, nil
}

// checkShapes compares the file's declared feature counts with env's.
func checkShapes(br *batchReader) error {
	for _, kv := range shapeMetadata() {
		if got, ok := br.meta[kv[0]]; !ok || got != kv[1] {
			return &DataError{File: br.name, Batch: -1, Row: -1,
				Err: fmt.Errorf("%s is %q, this build's observation has %s", kv[0], got, kv[1])}
		}
	}
	return nil
}

// Metadata returns the file's schema metadata.
func (r *TransitionsReader) Metadata() map[string]string { return r.br.meta }

// NumBatches is the number of record batches in the file.
func (r *TransitionsReader) NumBatches() int { return r.br.NumBatches() }

// Next loads the next batch; it returns false at the end of the file or
// on an error (see Err).
func (r *TransitionsReader) Next() bool {
	if !r.br.advance(&r.err, r.decode) {
		r.batch = r.batch[:0]
		return false
	}
	return true
}

// Batch returns the transitions of the current batch. Their observation
// slices point into the batch's Arrow buffers (no copy): they are valid
// until the next call to Next or Close. Use Transition.Clone to keep one.
func (r *TransitionsReader) Batch() []Transition { return r.batch }

// Err returns the error that stopped Next, if any.
func (r *TransitionsReader) Err() error { return r.err }

// Close releases the reader (and closes the file OpenTransitions opened).
func (r *TransitionsReader) Close() error { return r.br.close() }

// listF32 and listI32 view row i of a list column as a Go slice.
func listF32(l *array.List, v []float32, i int) []float32 {
	lo, hi := l.ValueOffsets(i)
	return v[lo:hi:hi]
}

func listI32(l *array.List, v []int32, i int) []int32 {
	lo, hi := l.ValueOffsets(i)
	return v[lo:hi:hi]
}

func (r *TransitionsReader) decode(rec arrow.RecordBatch) error {
	if err := r.br.checkNulls(rec); err != nil {
		return err
	}
	c := rec.Columns()
	n := int(rec.NumRows())
	i32 := func(col int) []int32 { return c[col].(*array.Int32).Int32Values() }
	f32 := func(col int) []float32 { return c[col].(*array.Float32).Float32Values() }
	f64 := func(col int) []float64 { return c[col].(*array.Float64).Float64Values() }
	type list struct {
		l   *array.List
		f32 []float32
		i32 []int32
	}
	var lists [tcColumns]list
	for i, a := range c {
		if l, ok := a.(*array.List); ok {
			lists[i].l = l
			switch v := l.ListValues().(type) {
			case *array.Float32:
				lists[i].f32 = v.Float32Values()
			case *array.Int32:
				lists[i].i32 = v.Int32Values()
			}
		}
	}
	runID := c[tcRunID].(*array.String)
	episode, jobID, machines, gpus, jobs, pendingRow := i32(tcEpisode), i32(tcJobID), i32(tcMachines), i32(tcGPUs), i32(tcJobs), i32(tcPendingRow)
	step := c[tcStep].(*array.Int64).Int64Values()
	tm := f64(tcTime)
	node, gpu, delta := i32(tcNode), i32(tcGPUIndex), i32(tcReplicaDelta)
	affinity, damping, logp, value := f32(tcAffinity), f32(tcDamping), f32(tcLogp), f32(tcValue)
	reward, succ, energy, latency := f64(tcReward), f64(tcRewardSuccess), f64(tcRewardEnergy), f64(tcRewardLatency)
	done := c[tcDone].(*array.Boolean)
	version := c[tcPolicyVersion].(*array.Uint64).Uint64Values()
	maskL := lists[tcMask].l
	maskV := maskL.ListValues().(*array.Boolean)
	r.batch = r.batch[:0]
	if n == 0 {
		return nil
	}

	// The masks are bit-packed in the file: unpack the batch's into one
	// buffer, reused across batches.
	lo, _ := maskL.ValueOffsets(0)
	_, hi := maskL.ValueOffsets(n - 1)
	if cap(r.mask) < int(hi-lo) {
		r.mask = make([]bool, hi-lo)
	}
	r.mask = r.mask[:hi-lo]
	for k := range r.mask {
		r.mask[k] = maskV.Value(int(lo) + k)
	}
	if cap(r.batch) < n {
		r.batch = make([]Transition, n)
	}
	r.batch = r.batch[:n]
	prevRun := ""
	for i := 0; i < n; i++ {
		t := &r.batch[i]
		// Run IDs repeat down a file: share the string.
		if id := runID.Value(i); id != prevRun {
			prevRun = strings.Clone(id)
		}
		*t = Transition{
			RunID: prevRun, Episode: episode[i], Step: step[i], Time: tm[i], JobID: jobID[i],
			Action:        env.Action{Node: int(node[i]), GPU: int(gpu[i]), ReplicaDelta: int(delta[i]), Affinity: affinity[i], Damping: damping[i]},
			Reward:        env.RewardTerms{Total: reward[i], Success: succ[i], Energy: energy[i], Latency: latency[i]},
			Done:          done.Value(i),
			BehaviourLogp: logp[i], Value: value[i], PolicyVersion: version[i],
			Obs: env.Tensors{Machines: int(machines[i]), GPUs: int(gpus[i]), Jobs: int(jobs[i]), PendingRow: int(pendingRow[i])},
		}
		o := &t.Obs
		fl := func(col int) []float32 { return listF32(lists[col].l, lists[col].f32, i) }
		il := func(col int) []int32 { return listI32(lists[col].l, lists[col].i32, i) }
		o.Machine, o.GPU, o.Job, o.JobID = fl(tcMachine), fl(tcGPU), fl(tcJob), il(tcJobIDs)
		o.Pending, o.Global, o.History = fl(tcPending), fl(tcGlobal), fl(tcHistory)
		a, b := maskL.ValueOffsets(i)
		o.Mask = r.mask[a-lo : b-lo : b-lo]
		for rel := range o.Edges {
			o.Edges[rel] = env.Edges{Src: il(tcEdges + 3*rel), Dst: il(tcEdges + 3*rel + 1), Feat: fl(tcEdges + 3*rel + 2)}
		}
		if col, err := checkTransition(t); err != nil {
			return r.br.rowErr(i, col, "%w", err)
		}
	}
	return nil
}
