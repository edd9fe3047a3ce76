package serve

import (
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"

	"github.com/tegrl/tegrl/env"
)

// Cluster sync: the live model kept equal to a Kubernetes cluster. The
// package serve/kube feeds these methods from client-go informers on
// nodes and pods (and the bind verb feeds a placement as soon as the API
// server accepted it); they can also be called directly.
//
// A node becomes a machine from its allocatable resources (cpu, memory,
// nvidia.com/gpu) and these labels:
//
//	tegrl.io/gpu-model      the GPU model (matched against tegrl.io/gpu-models of pods)
//	nvidia.com/gpu.product  the GPU model as NVIDIA's GPU feature discovery labels it (used without tegrl.io/gpu-model)
//	tegrl.io/rack           the rack (switch; no power budget: racks from the cluster are uncapped); unlabelled nodes fill default racks of 20 in name order
//
// A pod with spec.nodeName set that has not succeeded or failed is a
// running job on that node, keyed namespace/name, with the resources
// podJob reads from its requests and annotations. Adding, removing or
// resizing a node rebuilds the model from the nodes and pods known (the
// env model has a fixed machine set); a pod event starts or stops one
// job; a cordoned or NotReady node stays in the model with its pods and
// fails the filter for new ones.

// Node labels tegrl reads.
const (
	// LabelGPUModel names a node's GPU model; it takes precedence over
	// LabelGPUProduct.
	LabelGPUModel = "tegrl.io/gpu-model"
	// LabelGPUProduct is the GPU model label of NVIDIA's GPU feature
	// discovery.
	LabelGPUProduct = "nvidia.com/gpu.product"
	// LabelRack names a node's rack.
	LabelRack = "tegrl.io/rack"
	// UnknownGPUModel is the model of a GPU node without a model label.
	UnknownGPUModel = "unknown"
)

// maxTombstones bounds the deleted pod UIDs remembered, so that a bind
// that lands after the pod's deletion was seen does not bring it back.
const maxTombstones = 4096

// kubeNode is a node as the cluster sync knows it.
type kubeNode struct {
	spec env.MachineSpec
	open bool   // new pods may go there: not cordoned, not NotReady
	err  string // why the node is not a machine of the model ("" when it is)
}

// kubePod is a bound, active pod as the cluster sync knows it.
type kubePod struct {
	uid  string
	node string
	job  JobJSON
	// group is the pod's group (namespace/name, LabelPodGroup), or "".
	group string
	// reqErr says why the pod's requests do not convert to a job (it
	// stays out of the model); err why it is not a running job of the
	// model otherwise ("" when it is).
	reqErr, err string
}

// why is the reason the pod is not a running job of the model.
func (kp *kubePod) why() string {
	if kp.reqErr != "" {
		return kp.reqErr
	}
	return kp.err
}

// kubeState is the cluster sync's record of the Kubernetes cluster
// (s.mu guards it, with the model it keeps).
type kubeState struct {
	nodes map[string]*kubeNode
	pods  map[string]*kubePod
	// gone remembers deleted pod UIDs (ring of maxTombstones).
	gone     map[string]bool
	goneRing []string
	goneNext int
	// synced: nodes came from the cluster; the model belongs to the sync
	// and is rebuilt when it is not the one applied (a full /v1/state
	// replaced it).
	synced   bool
	applied  *model
	rebuilds int

	binder Binder
	// gang is the extender's pod group plans (gang.go).
	gang gangState

	metOnce  sync.Once
	events   *prometheus.CounterVec // object, event
	unplaced prometheus.Gauge
	rebuilt  prometheus.Counter
	binds    *prometheus.CounterVec // result
	plans    prometheus.Gauge       // pod group plans in flight
	planEv   *prometheus.CounterVec // event
}

// init makes the record's maps (s.mu held) and its metrics.
func (k *kubeState) init(reg *prometheus.Registry) {
	if k.nodes == nil {
		k.nodes, k.pods, k.gone = map[string]*kubeNode{}, map[string]*kubePod{}, map[string]bool{}
	}
	k.initMetrics(reg)
}

// initMetrics registers the cluster sync's metrics once (safe without
// s.mu).
func (k *kubeState) initMetrics(reg *prometheus.Registry) {
	k.metOnce.Do(func() {
		k.events = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tegrl_serve_kube_events_total",
			Help: "Cluster events applied to the live model, by object (node, pod, sync) and event (upsert, delete, full)."},
			[]string{"object", "event"})
		k.unplaced = prometheus.NewGauge(prometheus.GaugeOpts{Name: "tegrl_serve_kube_pods_unplaced",
			Help: "Bound pods that are not running jobs of the model (unknown node, does not fit its accounting, bad requests)."})
		k.rebuilt = prometheus.NewCounter(prometheus.CounterOpts{Name: "tegrl_serve_kube_rebuilds_total",
			Help: "Rebuilds of the live model from the cluster's nodes and pods (a node added, removed or resized)."})
		k.binds = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tegrl_serve_binds_total",
			Help: "Bind calls by result (bound, error)."}, []string{"result"})
		k.plans = prometheus.NewGauge(prometheus.GaugeOpts{Name: "tegrl_serve_pod_group_plans",
			Help: "Pod group plans in flight (members still to bind hold reservations)."})
		k.planEv = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tegrl_serve_pod_group_events_total",
			Help: "Pod group plans by event: planned, unfit (the group did not fit at once), done (every member bound), expired, lost (a reserved node went down or was cordoned, or the model was rebuilt)."},
			[]string{"event"})
		reg.MustRegister(k.events, k.unplaced, k.rebuilt, k.binds, k.plans, k.planEv)
	})
}

func (k *kubeState) tomb(uid string) {
	if uid == "" || k.gone[uid] {
		return
	}
	if len(k.goneRing) < maxTombstones {
		k.goneRing = append(k.goneRing, uid)
	} else {
		delete(k.gone, k.goneRing[k.goneNext])
		k.goneRing[k.goneNext] = uid
		k.goneNext = (k.goneNext + 1) % maxTombstones
	}
	k.gone[uid] = true
}

// NodeMachine converts a node into the machine the model keeps, and
// reports whether new pods may go there (neither cordoned nor with a
// Ready condition other than True; a node without the condition is open).
func NodeMachine(n *v1.Node) (env.MachineSpec, bool, error) {
	sp := env.MachineSpec{Name: n.Name, Rack: n.Labels[LabelRack]}
	a := n.Status.Allocatable
	if q, ok := a[v1.ResourceCPU]; ok {
		sp.CPU = q.MilliValue()
	}
	if q, ok := a[v1.ResourceMemory]; ok {
		sp.Mem = q.Value() >> 20 // whole MiB: pods are rounded up, so the model never admits more than the node holds
	}
	if q, ok := a[resourceGPU]; ok {
		g := q.Value()
		if g < 0 || g > env.MaxGPUsPerMachine {
			return sp, false, fmt.Errorf("node %s: allocatable nvidia.com/gpu %s outside [0, %d]", n.Name, q.String(), env.MaxGPUsPerMachine)
		}
		sp.GPUs = int(g)
	}
	if sp.GPUs > 0 {
		sp.GPUModel = n.Labels[LabelGPUModel]
		if sp.GPUModel == "" {
			sp.GPUModel = n.Labels[LabelGPUProduct]
		}
		if sp.GPUModel == "" {
			sp.GPUModel = UnknownGPUModel
		}
	}
	switch {
	case n.Name == "":
		return sp, false, fmt.Errorf("node without a name")
	case sp.CPU <= 0 || sp.Mem <= 0:
		return sp, false, fmt.Errorf("node %s: allocatable cpu %d millicores and memory %d MiB must be > 0", n.Name, sp.CPU, sp.Mem)
	}
	open := !n.Spec.Unschedulable
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady && c.Status != v1.ConditionTrue {
			open = false
		}
	}
	return sp, open, nil
}

// podActive reports whether a pod holds its node's resources: bound and
// neither succeeded nor failed.
func podActive(p *v1.Pod) bool {
	return p.Spec.NodeName != "" && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed
}

// kubePodJob converts a bound pod to its job; a pod whose tegrl
// annotations do not parse is accounted by its resource requests alone
// (it runs and holds them all the same).
func kubePodJob(p *v1.Pod) (JobJSON, error) {
	js, err := podJob(p)
	if err == nil {
		return js, nil
	}
	q := *p
	q.Annotations = nil
	if js, err2 := podJob(&q); err2 == nil {
		return js, nil
	}
	return js, err
}

// kubeUpdate runs f on the cluster sync's record under the model lock and
// refreshes readiness afterwards when the model was replaced.
func (s *Service) kubeUpdate(f func(k *kubeState)) {
	rebuilt := false
	func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		k := &s.kube
		k.init(s.met.reg)
		before := k.rebuilds
		f(k)
		rebuilt = k.rebuilds != before
		n := 0
		for _, p := range k.pods {
			if p.why() != "" {
				n++
			}
		}
		k.unplaced.Set(float64(n))
	}()
	if rebuilt {
		s.updateReady()
	}
}

// SyncCluster replaces the cluster sync's record with the given nodes and
// pods (an informer's full list) and makes the model equal to them:
// rebuilt when the machines changed, pods started and stopped otherwise.
func (s *Service) SyncCluster(nodes []*v1.Node, pods []*v1.Pod) {
	nn := make(map[string]*kubeNode, len(nodes))
	for _, n := range nodes {
		sp, open, err := NodeMachine(n)
		kn := &kubeNode{spec: sp, open: open}
		if err != nil {
			kn.err = err.Error()
		}
		nn[n.Name] = kn
	}
	pp := make(map[string]*kubePod, len(pods))
	for _, p := range pods {
		if kp := newKubePod(p); kp != nil {
			pp[podKey(p)] = kp
		}
	}
	s.kubeUpdate(func(k *kubeState) {
		k.events.WithLabelValues("sync", "full").Inc()
		for key, kp := range pp {
			if k.gone[kp.uid] {
				delete(pp, key)
			}
		}
		same := k.synced && s.model == k.applied && len(nn) == len(k.nodes)
		for name, kn := range nn {
			if old, ok := k.nodes[name]; !ok || old.spec != kn.spec || old.err != kn.err {
				same = false
			}
		}
		old := k.pods
		k.nodes, k.pods, k.synced = nn, pp, true
		if !same {
			s.kubeRebuild()
			return
		}
		for key := range old {
			if _, ok := pp[key]; !ok {
				s.kubeUnplace(key)
			}
		}
		for key, kp := range pp {
			if o, ok := old[key]; ok && o.uid == kp.uid && o.node == kp.node && jobEqual(&o.job, &kp.job) && o.why() == "" && s.kubeRunning(key) {
				continue
			}
			s.kubePlace(key)
		}
		s.kubeObserve()
	})
}

// newKubePod is the record of p when p holds resources, else nil.
func newKubePod(p *v1.Pod) *kubePod {
	if !podActive(p) {
		return nil
	}
	kp := &kubePod{uid: string(p.UID), node: p.Spec.NodeName}
	if gr, _ := podGang(p); gr.Key != "" {
		kp.group = gr.Key // a bad size annotation leaves the pod in its group all the same
	}
	js, err := kubePodJob(p)
	kp.job = js
	if err != nil {
		kp.reqErr = "pod requests: " + err.Error()
	}
	return kp
}

// UpsertNode records a node added or changed: a new node or new
// resources rebuild the model; a change of schedulability only flips
// whether the filter admits new pods there.
func (s *Service) UpsertNode(n *v1.Node) {
	sp, open, err := NodeMachine(n)
	kn := &kubeNode{spec: sp, open: open}
	if err != nil {
		kn.err = err.Error()
		s.log.Warn("node is not a machine of the model", "node", n.Name, "err", err)
	}
	s.kubeUpdate(func(k *kubeState) {
		k.events.WithLabelValues("node", "upsert").Inc()
		old, ok := k.nodes[n.Name]
		k.nodes[n.Name] = kn
		wasSynced := k.synced
		k.synced = true
		if ok && wasSynced && old.spec == kn.spec && old.err == kn.err && s.model == k.applied {
			return
		}
		s.kubeRebuild()
	})
}

// RemoveNode forgets a node: the model is rebuilt without it; its pods
// stay recorded (unplaced) until they are deleted.
func (s *Service) RemoveNode(name string) {
	s.kubeUpdate(func(k *kubeState) {
		k.events.WithLabelValues("node", "delete").Inc()
		if _, ok := k.nodes[name]; !ok && s.model == k.applied {
			return
		}
		delete(k.nodes, name)
		k.synced = true
		s.kubeRebuild()
	})
}

// UpsertPod records a pod added or changed: bound and active, it becomes
// (or stays) a running job on its node; finished or unbound, its job
// stops.
func (s *Service) UpsertPod(p *v1.Pod) {
	kp := newKubePod(p)
	key := podKey(p)
	s.kubeUpdate(func(k *kubeState) {
		k.events.WithLabelValues("pod", "upsert").Inc()
		s.kubeSyncModel()
		if kp != nil && k.gone[kp.uid] {
			return
		}
		old, ok := k.pods[key]
		if kp == nil {
			if gr, _ := podGang(p); gr.Key != "" && (p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed || p.DeletionTimestamp != nil) {
				s.gangForget(gr.Key, key) // ended before it ran: its place waits for another member
			}
			if ok && (old.uid == string(p.UID) || p.UID == "") {
				delete(k.pods, key)
				s.kubeUnplace(key)
				s.kubeObserve()
			}
			return
		}
		if ok && old.uid == kp.uid && old.node == kp.node && jobEqual(&old.job, &kp.job) && s.kubeInModel(key) {
			return
		}
		k.pods[key] = kp
		s.kubePlace(key)
		s.kubeObserve()
	})
}

// RemovePod records a pod deleted: its job stops and its UID is
// remembered, so that a late bind of it is ignored.
func (s *Service) RemovePod(p *v1.Pod) {
	key := podKey(p)
	s.kubeUpdate(func(k *kubeState) {
		k.events.WithLabelValues("pod", "delete").Inc()
		s.kubeSyncModel()
		k.tomb(string(p.UID))
		if gr, _ := podGang(p); gr.Key != "" {
			s.gangForget(gr.Key, key)
		}
		if old, ok := k.pods[key]; ok && (old.uid == string(p.UID) || p.UID == "") {
			delete(k.pods, key)
			s.kubeUnplace(key)
			s.kubeObserve()
		}
	})
}

// kubeObserve updates the model gauges when there is a model (s.mu held).
func (s *Service) kubeObserve() {
	if s.model != nil {
		s.observeModel()
	}
}

// kubeSyncModel rebuilds the model when it belongs to the sync but was
// replaced behind its back (s.mu held).
func (s *Service) kubeSyncModel() {
	if k := &s.kube; k.synced && s.model != k.applied {
		s.kubeRebuild()
	}
}

// jobEqual compares two jobs by value (pointers by what they point to).
func jobEqual(a, b *JobJSON) bool { return reflect.DeepEqual(*a, *b) }

// kubeRunning reports whether a job runs under key in the model (s.mu
// held).
func (s *Service) kubeRunning(key string) bool {
	if s.model == nil {
		return false
	}
	_, ok := s.model.jobs[key]
	return ok
}

// kubeInModel reports whether pod key runs in the model as recorded
// (s.mu held).
func (s *Service) kubeInModel(key string) bool {
	kp := s.kube.pods[key]
	return kp != nil && kp.why() == "" && s.kubeRunning(key)
}

// kubeUnplace stops pod key's job in the model, if it runs (s.mu held).
func (s *Service) kubeUnplace(key string) {
	m := s.model
	if m == nil {
		return
	}
	if id, ok := m.jobs[key]; ok {
		if err := m.live.Stop(id); err != nil {
			s.log.Warn("stopping a pod's job", "pod", key, "err", err)
		}
		delete(m.jobs, key)
		delete(m.keys, id)
	}
}

// kubePlace makes pod key's job run in the model on its node, replacing
// what ran under the key; the reason it cannot goes to the record
// (s.mu held).
func (s *Service) kubePlace(key string) {
	s.kubeUnplace(key)
	kp := s.kube.pods[key]
	if kp == nil {
		return
	}
	m := s.model
	kp.err = ""
	switch {
	case kp.reqErr != "":
		return
	case m == nil:
		kp.err = "the model has no machines"
		return
	}
	i, ok := m.machines[kp.node]
	if !ok {
		kp.err = "node " + kp.node + " is not a machine of the model"
		return
	}
	if kp.group != "" {
		s.gangTake(kp.group, key, kp.node) // its reservation makes room for it
	}
	j, err := m.job(&kp.job, "pod", m.live.Now())
	if err == nil {
		j.ID = usageKey(key)
		var id int
		if id, err = m.live.Start(&j, i, -1); err == nil {
			m.jobs[key], m.keys[id] = id, key
			kp.err = ""
			return
		}
	}
	kp.err = err.Error()
	s.log.Warn("bound pod is not a running job of the model", "pod", key, "node", kp.node, "err", err)
}

// kubeRebuild builds the model anew from the recorded nodes (in name
// order) and starts every recorded pod on its node (in key order): the
// same record gives the same model (s.mu held).
func (s *Service) kubeRebuild() {
	k := &s.kube
	k.rebuilds++
	k.rebuilt.Inc()
	names := make([]string, 0, len(k.nodes))
	for name, kn := range k.nodes {
		if kn.err == "" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	specs := make([]env.MachineSpec, len(names))
	for i, name := range names {
		specs[i] = k.nodes[name].spec
	}
	if len(specs) == 0 {
		// No nodes left: the model keeps its machines (env models a fixed
		// machine set), all down, running nothing.
		if m := s.model; m != nil {
			for i := range m.live.Cluster().Machines {
				if _, err := m.setUp(i, false); err != nil {
					s.log.Warn("marking a machine down", "machine", m.live.Cluster().Machines[i].Name, "err", err)
				}
			}
			s.observeModel()
		}
		k.applied = s.model
		for _, kp := range k.pods {
			kp.err = "the cluster has no nodes"
		}
		s.log.Info("the cluster has no nodes: every machine of the model is down")
		return
	}
	c, err := env.NewCluster(specs)
	var m *model
	if err == nil {
		// A Kubernetes node declares no rack power budget: NewCluster's
		// default (a share of the machines' peak) would have the safety
		// layer refuse pods that fit the nodes' allocatable, which
		// kube-scheduler admits. Racks from the cluster are uncapped.
		for r := range c.Racks {
			c.Racks[r].PowerBudgetW = 0
		}
		m, err = s.newModel(c)
	}
	if err != nil {
		// Each node was checked on its own; a cluster that still fails
		// keeps the model it had.
		s.log.Error("rebuilding the model from the cluster's nodes", "nodes", len(specs), "err", err)
		return
	}
	s.setModel(m)
	k.applied = m
	keys := make([]string, 0, len(k.pods))
	for key := range k.pods {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		s.kubePlace(key)
	}
	s.observeModel()
	s.log.Info("model rebuilt from the cluster", "nodes", len(specs), "pods", len(keys))
}

// kubeClosed reports whether the cluster sync knows node name as closed
// to new pods: cordoned or not Ready (s.mu held).
func (s *Service) kubeClosed(name string) bool {
	kn := s.kube.nodes[name]
	return kn != nil && !kn.open
}

// ClusterNode is a machine of the model in GET /v1/cluster: its capacity,
// what the model has free, and the requests of the jobs it runs.
type ClusterNode struct {
	Name     string `json:"name"`
	CPUMilli int64  `json:"cpu_milli"`
	MemMiB   int64  `json:"mem_mib"`
	GPUs     int    `json:"gpus"`
	GPUModel string `json:"gpu_model,omitempty"`
	Up       bool   `json:"up"`
	// Schedulable is false for a node the cluster closed to new pods
	// (cordoned or not Ready).
	Schedulable  bool  `json:"schedulable"`
	FreeCPUMilli int64 `json:"free_cpu_milli"`
	FreeMemMiB   int64 `json:"free_mem_mib"`
	FreeGPUMilli int64 `json:"free_gpu_milli"`
	FullFreeGPUs int   `json:"full_free_gpus"`
	Jobs         int   `json:"jobs"`
	// Requested* add up the requests of the jobs running there.
	RequestedCPUMilli int64 `json:"requested_cpu_milli"`
	RequestedMemMiB   int64 `json:"requested_mem_mib"`
	RequestedGPUMilli int64 `json:"requested_gpu_milli"`
}

// ClusterJob is a running job of the model, or a bound pod that is not
// one (with the reason).
type ClusterJob struct {
	Key     string `json:"key"`
	Machine string `json:"machine"`
	// UID is the pod's UID (cluster sync only).
	UID     string `json:"uid,omitempty"`
	InModel bool   `json:"in_model"`
	Error   string `json:"error,omitempty"`
}

// ClusterResponse is the body of GET /v1/cluster: the live model's
// machines and running jobs, and what the cluster sync recorded but could
// not put in the model.
type ClusterResponse struct {
	Machines    []ClusterNode `json:"machines"`
	Jobs        []ClusterJob  `json:"jobs"`
	RunningJobs int           `json:"running_jobs"`
	// Unplaced lists bound pods that are not running jobs of the model.
	Unplaced []ClusterJob `json:"unplaced"`
	// NodeErrors maps nodes that are not machines of the model to why.
	NodeErrors map[string]string `json:"node_errors"`
	// Rebuilds counts the model's rebuilds from the cluster.
	Rebuilds int `json:"rebuilds"`
}

// Cluster describes the live model's machines and running jobs, sorted
// by name and key.
func (s *Service) Cluster() ClusterResponse {
	out := ClusterResponse{Machines: []ClusterNode{}, Jobs: []ClusterJob{}, Unplaced: []ClusterJob{}, NodeErrors: map[string]string{}}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := &s.kube
	out.Rebuilds = k.rebuilds
	for name, kn := range k.nodes {
		if kn.err != "" {
			out.NodeErrors[name] = kn.err
		}
	}
	for key, kp := range k.pods {
		if why := kp.why(); why != "" {
			out.Unplaced = append(out.Unplaced, ClusterJob{Key: key, Machine: kp.node, UID: kp.uid, Error: why})
		}
	}
	sort.Slice(out.Unplaced, func(a, b int) bool { return out.Unplaced[a].Key < out.Unplaced[b].Key })
	m := s.model
	if m == nil {
		return out
	}
	l := m.live
	c, st := l.Cluster(), l.State()
	out.Machines = make([]ClusterNode, len(c.Machines))
	for i := range c.Machines {
		mc, ms := &c.Machines[i], &st.M[i]
		out.Machines[i] = ClusterNode{Name: mc.Name, CPUMilli: mc.CPU, MemMiB: mc.Mem, GPUs: mc.GPUs, GPUModel: mc.GPUModel, Up: ms.Up,
			Schedulable: !s.kubeClosed(mc.Name), FreeCPUMilli: ms.FreeCPU, FreeMemMiB: ms.FreeMem, FreeGPUMilli: int64(ms.IdleGPU),
			FullFreeGPUs: int(ms.FullFree)}
	}
	out.RunningJobs = l.Running()
	for key, id := range m.jobs {
		j, i := l.Job(id), l.Machine(id)
		if j == nil || i < 0 {
			continue
		}
		cj := ClusterJob{Key: key, Machine: c.Machines[i].Name, InModel: true}
		if kp := k.pods[key]; kp != nil {
			cj.UID = kp.uid
		}
		out.Jobs = append(out.Jobs, cj)
		n := &out.Machines[i]
		n.Jobs++
		n.RequestedCPUMilli += j.CPU
		n.RequestedMemMiB += j.Mem
		n.RequestedGPUMilli += int64(j.GPUs) * int64(j.GPUMilli)
	}
	sort.Slice(out.Jobs, func(a, b int) bool { return out.Jobs[a].Key < out.Jobs[b].Key })
	return out
}

func (s *Service) handleCluster(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Cluster())
}
