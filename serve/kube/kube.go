// Package kube connects tegrl serve to a Kubernetes API server: client-go
// shared informers on nodes and pods keep the service's live model equal
// to the cluster (serve.Service.SyncCluster, UpsertNode, UpsertPod, ...),
// and the extender's bind verb binds pods through the API server
// (Sync implements serve.Binder).
//
// The informers' first full list defines the model; after that, each
// event updates it, and every resync period a full list is applied again,
// so that an event the model missed (or a bind recorded after its pod was
// deleted) cannot outlive one period.
package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tegrl/tegrl/serve"
)

// InCluster is the kubeconfig value that selects the pod's service
// account (rest.InClusterConfig) instead of a kubeconfig file.
const InCluster = "in-cluster"

// DefaultResync is the default period of the full re-sync.
const DefaultResync = 5 * time.Minute

// Options configure a Sync. Zero values mean the defaults noted.
type Options struct {
	// Resync is the period of the full re-sync of the model from the
	// informers' caches (default DefaultResync).
	Resync time.Duration
	// Logger receives the sync's log (default: discard).
	Logger *slog.Logger
	// QPS and Burst are the client's request rate limit towards the API
	// server (default DefaultQPS and DefaultBurst). Every bind is one
	// request: client-go's own default of 5 per second would hold a
	// burst of pods in tegrl past kube-scheduler's extender timeout.
	QPS   float32
	Burst int
}

// The default client rate limit: twice kube-scheduler's own (50, 100), as
// tegrl binds every pod kube-scheduler places through it.
const (
	DefaultQPS   = 100
	DefaultBurst = 200
)

// RESTConfig returns the client configuration for kubeconfig: InCluster
// for the pod's service account, else the path of a kubeconfig file
// (empty: $KUBECONFIG and ~/.kube/config, as kubectl reads them).
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == InCluster {
		c, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("kube: in-cluster config: %w", err)
		}
		return c, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	c, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kube: kubeconfig %q: %w", kubeconfig, err)
	}
	return c, nil
}

// Sync keeps a service's live model equal to a Kubernetes cluster and
// binds pods for its bind verb.
type Sync struct {
	svc     *serve.Service
	client  kubernetes.Interface
	factory informers.SharedInformerFactory
	nodeInf cache.SharedIndexInformer
	podInf  cache.SharedIndexInformer
	nodes   corelisters.NodeLister
	pods    corelisters.PodLister
	resync  time.Duration
	log     *slog.Logger
	// live: the first full sync ran; events apply from then on (before,
	// the full list covers them).
	live atomic.Bool
}

// New builds a Sync of svc's model with the cluster behind client and
// installs it as svc's binder. Run starts it.
func New(svc *serve.Service, client kubernetes.Interface, opt Options) (*Sync, error) {
	if opt.Resync == 0 {
		opt.Resync = DefaultResync
	}
	if opt.Resync < 0 {
		return nil, fmt.Errorf("kube: resync %v must be > 0", opt.Resync)
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	f := informers.NewSharedInformerFactory(client, 0)
	k := &Sync{svc: svc, client: client, factory: f, resync: opt.Resync, log: opt.Logger,
		nodeInf: f.Core().V1().Nodes().Informer(), podInf: f.Core().V1().Pods().Informer(),
		nodes: f.Core().V1().Nodes().Lister(), pods: f.Core().V1().Pods().Lister()}
	if _, err := k.nodeInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.node(obj, false) },
		UpdateFunc: func(_, obj any) { k.node(obj, false) },
		DeleteFunc: func(obj any) { k.node(obj, true) },
	}); err != nil {
		return nil, fmt.Errorf("kube: node handler: %w", err)
	}
	if _, err := k.podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.pod(obj, false) },
		UpdateFunc: func(_, obj any) { k.pod(obj, false) },
		DeleteFunc: func(obj any) { k.pod(obj, true) },
	}); err != nil {
		return nil, fmt.Errorf("kube: pod handler: %w", err)
	}
	svc.SetBinder(k)
	return k, nil
}

// Connect builds a client for kubeconfig (see RESTConfig) and a Sync of
// svc's model with that cluster.
func Connect(svc *serve.Service, kubeconfig string, opt Options) (*Sync, error) {
	c, err := RESTConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	c.UserAgent = "tegrl-serve"
	c.QPS, c.Burst = opt.QPS, opt.Burst
	if c.QPS <= 0 {
		c.QPS = DefaultQPS
	}
	if c.Burst <= 0 {
		c.Burst = DefaultBurst
	}
	client, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("kube: client: %w", err)
	}
	return New(svc, client, opt)
}

// unwrap returns the object of an informer event, looking through the
// tombstone of a delete the informer saw late.
func unwrap(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

func (k *Sync) node(obj any, deleted bool) {
	n, ok := unwrap(obj).(*v1.Node)
	if !ok || !k.live.Load() {
		return
	}
	if deleted {
		k.svc.RemoveNode(n.Name)
		return
	}
	k.svc.UpsertNode(n)
}

func (k *Sync) pod(obj any, deleted bool) {
	p, ok := unwrap(obj).(*v1.Pod)
	if !ok || !k.live.Load() {
		return
	}
	if deleted {
		k.svc.RemovePod(p)
		return
	}
	k.svc.UpsertPod(p)
}

// Synced reports whether the first full sync is done: the model holds
// the cluster.
func (k *Sync) Synced() bool { return k.live.Load() }

// Run starts the informers, waits for their first lists, applies them in
// full, then applies every event, and the full lists again every resync
// period, until ctx ends.
func (k *Sync) Run(ctx context.Context) error {
	k.factory.Start(ctx.Done())
	defer k.factory.Shutdown()
	start := time.Now()
	if !cache.WaitForCacheSync(ctx.Done(), k.nodeInf.HasSynced, k.podInf.HasSynced) {
		return fmt.Errorf("kube: informer caches did not sync: %w", context.Cause(ctx))
	}
	// Events from now on apply; the full sync after covers those before.
	k.live.Store(true)
	if err := k.FullSync(); err != nil {
		return err
	}
	k.log.Info("kube: model synced with the cluster", "took", time.Since(start))
	t := time.NewTicker(k.resync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := k.FullSync(); err != nil {
				k.log.Warn("kube: full sync", "err", err)
			}
		}
	}
}

// FullSync applies the informers' caches to the model in full.
func (k *Sync) FullSync() error {
	nodes, err := k.nodes.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("kube: listing nodes: %w", err)
	}
	pods, err := k.pods.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("kube: listing pods: %w", err)
	}
	k.svc.SyncCluster(nodes, pods)
	return nil
}

// errNoPod is a bind of a pod the cluster does not have.
var errNoPod = errors.New("no such pod")

// Bind binds pod namespace/name to node through the API server (a
// pods/binding subresource, with the UID as precondition) and returns the
// pod as it was before the binding: the informer's cache, or the API
// server when the cache has not seen it yet.
func (k *Sync) Bind(ctx context.Context, namespace, name string, uid types.UID, node string) (*v1.Pod, error) {
	p, err := k.pods.Pods(namespace).Get(name)
	if err != nil || (uid != "" && p.UID != uid) {
		if p, err = k.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return nil, fmt.Errorf("reading the pod: %w", err)
		}
		if uid != "" && p.UID != uid {
			return nil, fmt.Errorf("%w: %s/%s has UID %s, not %s", errNoPod, namespace, name, p.UID, uid)
		}
	}
	b := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: uid},
		Target: v1.ObjectReference{Kind: "Node", Name: node}}
	if err := k.client.CoreV1().Pods(namespace).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	return p, nil
}

var _ serve.Binder = (*Sync)(nil)

// Attach returns a serve.Options.Attach that keeps the service's model
// equal to the cluster of kubeconfig (Connect, then Run until the
// service stops); its errors name tegrl serve's --kubeconfig.
func Attach(kubeconfig string, opts Options) func(context.Context, *serve.Service) (func(), error) {
	return func(ctx context.Context, svc *serve.Service) (func(), error) {
		ks, err := Connect(svc, kubeconfig, opts)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig: %w", err)
		}
		log := opts.Logger
		if log == nil {
			log = slog.New(slog.DiscardHandler)
		}
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := ks.Run(ctx); err != nil {
				log.Error("serve: cluster sync stopped", "err", err)
			}
		}()
		log.Info("serve: syncing the model with the Kubernetes cluster", "kubeconfig", kubeconfig, "resync", opts.Resync)
		return func() {
			cancel()
			<-done
		}, nil
	}
}
