package serve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/tegrl/tegrl/env"
)

// The Kubernetes scheduler extender: kube-scheduler posts ExtenderArgs
// (the pod and the candidate nodes) to /filter and /prioritize and reads
// back an ExtenderFilterResult and a HostPriorityList. The JSON follows
// the Go types of k8s.io/kube-scheduler/extender/v1, which have no JSON
// tags (keys "Pod", "Nodes", "NodeNames", ...), exactly as kube-scheduler
// marshals them.
//
// A pod becomes a job from its containers' resource requests (cpu,
// memory, nvidia.com/gpu) and these annotations:
//
//	tegrl.io/gpu-milli     per-GPU demand in milli-GPU (a share of one GPU: "500")
//	tegrl.io/kind          batch, training or service
//	tegrl.io/service       the service a replica belongs to
//	tegrl.io/qos           BE, Burstable, Guaranteed or LS (default: the pod's QoS class)
//	tegrl.io/duration-s    expected run time in seconds
//	tegrl.io/gpu-models    allowed GPU models, comma-separated
//
// The tenant is the pod's namespace; the A/B key its namespace/name.

// Pod annotations tegrl reads.
const (
	annGPUMilli  = "tegrl.io/gpu-milli"
	annKind      = "tegrl.io/kind"
	annService   = "tegrl.io/service"
	annQoS       = "tegrl.io/qos"
	annDuration  = "tegrl.io/duration-s"
	annGPUModels = "tegrl.io/gpu-models"
	resourceGPU  = v1.ResourceName("nvidia.com/gpu")
)

// podKey is the pod's A/B key: namespace/name.
func podKey(p *v1.Pod) string {
	ns := p.Namespace
	if ns == "" {
		ns = "default"
	}
	return ns + "/" + p.Name
}

// podJob converts a pod to the API's job description.
func podJob(p *v1.Pod) (JobJSON, error) {
	var js JobJSON
	js.Name = podKey(p)
	js.Tenant = p.Namespace
	var cpu, mem, gpu int64
	add := func(rl v1.ResourceList, sum bool) error {
		q := func(name v1.ResourceName, f func(resource.Quantity) int64) (int64, error) {
			v, ok := rl[name]
			if !ok {
				return 0, nil
			}
			if v.Sign() < 0 {
				return 0, fmt.Errorf("negative %s request %s", name, v.String())
			}
			return f(v), nil
		}
		c, err := q(v1.ResourceCPU, func(v resource.Quantity) int64 { return v.MilliValue() })
		if err != nil {
			return err
		}
		m, err := q(v1.ResourceMemory, func(v resource.Quantity) int64 { return (v.Value() + 1<<20 - 1) >> 20 })
		if err != nil {
			return err
		}
		g, err := q(resourceGPU, func(v resource.Quantity) int64 { return v.Value() })
		if err != nil {
			return err
		}
		if sum {
			cpu, mem, gpu = cpu+c, mem+m, gpu+g
		} else {
			cpu, mem, gpu = max(cpu, c), max(mem, m), max(gpu, g)
		}
		return nil
	}
	for i := range p.Spec.Containers {
		if err := add(p.Spec.Containers[i].Resources.Requests, true); err != nil {
			return js, fieldErr("Pod.spec.containers["+strconv.Itoa(i)+"].resources.requests", "%v", err)
		}
	}
	// Init containers run one at a time before the others: the pod needs
	// the larger of their largest request and the containers' sum.
	for i := range p.Spec.InitContainers {
		if err := add(p.Spec.InitContainers[i].Resources.Requests, false); err != nil {
			return js, fieldErr("Pod.spec.initContainers["+strconv.Itoa(i)+"].resources.requests", "%v", err)
		}
	}
	if gpu > env.MaxGPUsPerMachine {
		return js, fieldErr("Pod.spec.containers.resources.requests[nvidia.com/gpu]", "%d GPUs, at most %d", gpu, env.MaxGPUsPerMachine)
	}
	js.CPUMilli, js.MemMiB, js.GPUs = cpu, mem, int(gpu)
	ann := p.Annotations
	if s, ok := ann[annGPUMilli]; ok {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 || v > env.MilliGPU {
			return js, fieldErr("Pod.metadata.annotations["+annGPUMilli+"]", "%q is not a milli-GPU count in (0, 1000]", s)
		}
		js.GPUMilli = v
		if js.GPUs == 0 {
			js.GPUs = 1
		}
	}
	js.Kind = ann[annKind]
	js.Service = ann[annService]
	if js.Service != "" && js.Kind == "" {
		js.Kind = "service"
	}
	if s, ok := ann[annDuration]; ok {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !finiteNonNeg(v) {
			return js, fieldErr("Pod.metadata.annotations["+annDuration+"]", "%q is not a duration in seconds", s)
		}
		js.DurationS = &v
	}
	if s, ok := ann[annGPUModels]; ok && s != "" {
		for _, m := range strings.Split(s, ",") {
			if m = strings.TrimSpace(m); m != "" {
				js.GPUModels = append(js.GPUModels, m)
			}
		}
	}
	js.QoS = ann[annQoS]
	if js.QoS == "" {
		switch p.Status.QOSClass {
		case v1.PodQOSBestEffort:
			js.QoS = "BE"
		case v1.PodQOSGuaranteed:
			js.QoS = "Guaranteed"
		default:
			js.QoS = "Burstable"
		}
	}
	return js, nil
}

// nodeNames lists the candidate nodes of args, from NodeNames (node cache
// capable extenders) or Nodes.
func nodeNames(args *extenderv1.ExtenderArgs) []string {
	if args.NodeNames != nil {
		return *args.NodeNames
	}
	if args.Nodes == nil {
		return nil
	}
	out := make([]string, len(args.Nodes.Items))
	for i := range args.Nodes.Items {
		out[i] = args.Nodes.Items[i].Name
	}
	return out
}

func (s *Service) extenderArgs(w http.ResponseWriter, r *http.Request) (*extenderv1.ExtenderArgs, JobJSON, error) {
	var args extenderv1.ExtenderArgs
	if err := decodeLenient(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes), &args); err != nil {
		return nil, JobJSON{}, err
	}
	if args.Pod == nil {
		return &args, JobJSON{}, fieldErr("Pod", "missing")
	}
	if args.Pod.Name == "" {
		return &args, JobJSON{}, fieldErr("Pod.metadata.name", "empty")
	}
	if len(podKey(args.Pod)) > maxKeyLen {
		return &args, JobJSON{}, fieldErr("Pod.metadata.name", "namespace/name longer than %d bytes", maxKeyLen)
	}
	js, err := podJob(args.Pod)
	return &args, js, err
}

// Filter failure reasons.
const (
	reasonUnknownNode = "tegrl: unknown node (not in tegrl's model of the cluster)"
	reasonDown        = "tegrl: machine is down"
	reasonFree        = "tegrl: insufficient free cpu, memory or GPU"
	reasonSafety      = "tegrl: refused by the safety layer (memory or rack power barrier)"
	reasonGPUModel    = "tegrl: the node's GPU model is not among the pod's allowed models"
	reasonTooLarge    = "tegrl: the pod requests more cpu, memory or GPUs than the node has"
)

// nodeReason says why machine i does not take r now, and whether
// preempting pods could change that (false: unresolvable); "" when it
// takes it.
func nodeReason(c *env.Cluster, st *env.State, i int, r *env.Request) (string, bool) {
	m := &c.Machines[i]
	switch {
	case !st.M[i].Up:
		return reasonDown, false
	case r.CPU > m.CPU || r.Mem > m.Mem || r.GPUs > m.GPUs:
		return reasonTooLarge, false
	case r.GPUs > 0 && !st.ModelOK(i, r):
		return reasonGPUModel, false
	case !st.Fits(i, r):
		return reasonFree, true
	case !st.Admit(i, r):
		return reasonSafety, true
	}
	return "", true
}

// Filter answers kube-scheduler's filter call: the nodes where the pod
// fits now and the safety layer admits it pass; the others fail with the
// reason, in FailedNodes when preempting pods could make room (free
// capacity, the safety layer) and in FailedAndUnresolvableNodes when not
// (machine down, the pod larger than the node, a GPU model it does not
// allow, a node tegrl does not know).
func (s *Service) Filter(args *extenderv1.ExtenderArgs, js *JobJSON) (extenderv1.ExtenderFilterResult, error) {
	return s.FilterContext(context.Background(), args, js)
}

// FilterContext is Filter for a request that ends with ctx.
func (s *Service) FilterContext(ctx context.Context, args *extenderv1.ExtenderArgs, js *JobJSON) (extenderv1.ExtenderFilterResult, error) {
	names := nodeNames(args)
	var res extenderv1.ExtenderFilterResult
	failed, unresolvable := extenderv1.FailedNodesMap{}, extenderv1.FailedNodesMap{}
	pass := make([]bool, len(names))
	gr, err := podGang(args.Pod)
	if err != nil {
		return res, err
	}
	unknown, err := s.filterNodes(ctx, names, js, gr, podKey(args.Pod), pass, failed, unresolvable)
	if err != nil {
		return res, err
	}
	s.met.unknownNode.Add(float64(unknown))
	if args.NodeNames != nil {
		keep := make([]string, 0, len(names))
		for k, n := range names {
			if pass[k] {
				keep = append(keep, n)
			}
		}
		res.NodeNames = &keep
	} else if args.Nodes != nil {
		nl := &v1.NodeList{}
		for k := range names {
			if pass[k] {
				nl.Items = append(nl.Items, args.Nodes.Items[k])
			}
		}
		res.Nodes = nl
	}
	res.FailedNodes, res.FailedAndUnresolvableNodes = failed, unresolvable
	return res, nil
}

// filterNodes sets pass[k] for the nodes that take the pod and fills the
// failure maps for the others, under the model's lock; it returns how
// many nodes were unknown. A member of a pod group passes only its
// planned node (gang.go).
func (s *Service) filterNodes(ctx context.Context, names []string, js *JobJSON, gr podGroup, pod string, pass []bool, failed, unresolvable extenderv1.FailedNodesMap) (int, error) {
	if err := s.mu.LockContext(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if s.model == nil {
		return 0, &notReadyError{"no cluster yet: POST /v1/state with the machines"}
	}
	s.gangSweep()
	if gr.Key != "" {
		return s.gangFilter(ctx, gr, pod, js, names, pass, failed, unresolvable)
	}
	j, err := s.model.job(js, "Pod", s.model.live.Now())
	if err != nil {
		return 0, err
	}
	l := s.model.live
	st, c := l.State(), l.Cluster()
	req := l.Request(&j)
	unknown := 0
	for k, n := range names {
		i, ok := s.model.machines[n]
		if !ok {
			unresolvable[n] = reasonUnknownNode
			unknown++
			continue
		}
		why, resolvable := nodeReason(c, st, i, &req)
		if why == "" && s.kubeClosed(n) {
			why = "tegrl: node is cordoned or not Ready" // until the cluster opens it again
		}
		switch {
		case why == "":
			pass[k] = true
		case resolvable:
			failed[n] = why
		default:
			unresolvable[n] = why
		}
	}
	return unknown, nil
}

func (s *Service) handleFilter(w http.ResponseWriter, r *http.Request) {
	args, js, err := s.extenderArgs(w, r)
	var res extenderv1.ExtenderFilterResult
	if err == nil {
		res, err = s.FilterContext(s.withReserveRole(r.Context(), r), args, &js)
	}
	if err != nil {
		// kube-scheduler reads the reason only from a 200 answer's Error
		// (it logs nothing but the status code of others).
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			err = fmt.Errorf("body larger than the limit of %d bytes", mbe.Limit)
		}
		s.met.extenderErrors.WithLabelValues("filter").Inc()
		writeJSON(w, http.StatusOK, extenderv1.ExtenderFilterResult{Error: "tegrl: " + err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// Prioritize answers kube-scheduler's prioritize call: the arm's scheduler
// decides for the pod; its machine scores MaxExtenderPriority (10), the
// other admitted nodes 1 to 9 by their Langevin energy (lower energy,
// higher score), nodes that do not admit the pod and unknown nodes 0. A
// member of a pod group scores its planned node 10 and every other 0.
func (s *Service) Prioritize(args *extenderv1.ExtenderArgs, js *JobJSON) (extenderv1.HostPriorityList, error) {
	return s.PrioritizeContext(context.Background(), args, js)
}

// PrioritizeContext is Prioritize for a request that ends with ctx.
func (s *Service) PrioritizeContext(ctx context.Context, args *extenderv1.ExtenderArgs, js *JobJSON) (extenderv1.HostPriorityList, error) {
	names := nodeNames(args)
	key := podKey(args.Pod)
	gr, err := podGang(args.Pod)
	if err != nil {
		return nil, err
	}
	if gr.Key != "" {
		return s.gangPrioritize(ctx, gr, key, js, names)
	}
	idx := make([]int, len(names))
	var energies []float64
	d, err := s.decide(ctx, key, js, "prioritize", func(d *decision) error {
		for k, n := range names {
			if i, ok := s.model.machines[n]; ok {
				idx[k] = i
			} else {
				idx[k] = -1
			}
		}
		var err error
		energies, err = s.model.live.Energies(&d.job, idx, make([]float64, 0, len(idx)))
		return err
	})
	if err != nil {
		return nil, err
	}
	s.account(&d, "prioritize")
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, e := range energies {
		if !math.IsInf(e, 0) && !math.IsNaN(e) {
			lo, hi = min(lo, e), max(hi, e)
		}
	}
	out := make(extenderv1.HostPriorityList, len(names))
	for k, n := range names {
		out[k].Host = n
		e := energies[k]
		switch {
		case idx[k] >= 0 && idx[k] == d.action.Node:
			out[k].Score = extenderv1.MaxExtenderPriority
		case math.IsInf(e, 0) || math.IsNaN(e):
			out[k].Score = extenderv1.MinExtenderPriority
		case hi > lo:
			out[k].Score = 1 + int64(math.Round(8*(hi-e)/(hi-lo)))
		default:
			out[k].Score = 5
		}
	}
	return out, nil
}

func (s *Service) handlePrioritize(w http.ResponseWriter, r *http.Request) {
	args, js, err := s.extenderArgs(w, r)
	var res extenderv1.HostPriorityList
	if err == nil {
		res, err = s.PrioritizeContext(s.withReserveRole(r.Context(), r), args, &js)
	}
	if err != nil {
		// A HostPriorityList has no error field, and kube-scheduler drops
		// the body of a non-200 answer: every node scores 0 (tegrl has no
		// preference, kube-scheduler's own scores decide) and the reason
		// goes in the X-Tegrl-Error header and the log.
		s.met.extenderErrors.WithLabelValues("prioritize").Inc()
		s.log.Warn("prioritize: no scores for this pod", "err", err)
		w.Header().Set("X-Tegrl-Error", clip(strings.ReplaceAll(err.Error(), "\n", " "), 512))
		res = extenderv1.HostPriorityList{}
		if args != nil {
			for _, n := range nodeNames(args) {
				res = append(res, extenderv1.HostPriority{Host: n, Score: extenderv1.MinExtenderPriority})
			}
		}
	}
	writeJSON(w, http.StatusOK, res)
}

// gangPrioritize scores a pod group member's planned node
// MaxExtenderPriority and every other node MinExtenderPriority; all score
// the minimum while the group does not fit.
func (s *Service) gangPrioritize(ctx context.Context, gr podGroup, pod string, js *JobJSON, names []string) (extenderv1.HostPriorityList, error) {
	if err := s.mu.LockContext(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if s.model == nil {
		return nil, &notReadyError{"no cluster yet: POST /v1/state with the machines"}
	}
	node, err := s.gangNode(ctx, gr, pod, js, names)
	if err != nil {
		return nil, err
	}
	out := make(extenderv1.HostPriorityList, len(names))
	for k, n := range names {
		out[k] = extenderv1.HostPriority{Host: n, Score: extenderv1.MinExtenderPriority}
		if n == node {
			out[k].Score = extenderv1.MaxExtenderPriority
		}
	}
	return out, nil
}
