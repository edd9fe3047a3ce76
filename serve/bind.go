package serve

import (
	"context"
	"fmt"
	"net/http"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// Binder binds pods to nodes through the Kubernetes API server: the bind
// verb's back end (package serve/kube has the client-go one).
type Binder interface {
	// Bind binds pod namespace/name (UID uid, when given, as the API
	// server's precondition) to node and returns the pod with its
	// resource requests, as the caller knows it.
	Bind(ctx context.Context, namespace, name string, uid types.UID, node string) (*v1.Pod, error)
}

// SetBinder installs the back end of the bind verb; nil (the default)
// makes every bind fail with a reason.
func (s *Service) SetBinder(b Binder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kube.binder = b
}

func (s *Service) binderOf() Binder {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kube.binder
}

// Bind answers kube-scheduler's bind call: it binds the pod through the
// API server and, once the server accepted the binding, records the pod
// as a running job on the node (taking its resources in the model), so
// that the next filter and prioritize calls see the placement. The error
// is the reason for ExtenderBindingResult.Error.
func (s *Service) Bind(ctx context.Context, args *extenderv1.ExtenderBindingArgs) error {
	s.kube.initMetrics(s.met.reg)
	switch {
	case args.PodName == "":
		return fieldErr("PodName", "empty")
	case args.Node == "":
		return fieldErr("Node", "empty")
	}
	ns := args.PodNamespace
	if ns == "" {
		ns = "default"
	}
	b := s.binderOf()
	if b == nil {
		s.kube.binds.WithLabelValues("error").Inc()
		return fmt.Errorf("bind %s/%s: no API server to bind through (serve runs without --kubeconfig)", ns, args.PodName)
	}
	pod, err := b.Bind(ctx, ns, args.PodName, args.PodUID, args.Node)
	if err != nil {
		s.kube.binds.WithLabelValues("error").Inc()
		return fmt.Errorf("bind %s/%s to %s: %w", ns, args.PodName, args.Node, err)
	}
	s.kube.binds.WithLabelValues("bound").Inc()
	// The API server holds the binding now: record it whatever becomes of
	// the request (the informer's update of the pod confirms it).
	p := pod.DeepCopy()
	p.Namespace, p.Name, p.Spec.NodeName = ns, args.PodName, args.Node
	if p.UID == "" {
		p.UID = args.PodUID
	}
	s.UpsertPod(p)
	return nil
}

func (s *Service) handleBind(w http.ResponseWriter, r *http.Request) {
	var args extenderv1.ExtenderBindingArgs
	if err := decodeLenient(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes), &args); err != nil {
		writeError(w, err)
		return
	}
	// kube-scheduler reads the reason only from a 200 answer.
	var res extenderv1.ExtenderBindingResult
	if err := s.Bind(r.Context(), &args); err != nil {
		res.Error = err.Error()
	}
	writeJSON(w, http.StatusOK, res)
}
