// Package serve is tegrl's real-time scheduling service: a JSON API over
// HTTP that keeps a live model of a cluster (env.Live) fed by state
// updates and answers placement decisions from any env.Scheduler, the
// built-in ones by name and learned policies from policy files.
//
// Endpoints:
//
//   - POST /v1/state: the cluster (a full list of machines defines it) or a
//     delta: jobs started and stopped, machines down and up, measured
//     usage, the queue, the cluster's clock.
//   - POST /v1/decide: a pending job -> action (machine, GPU, replica
//     delta, affinity, damping), decision id, arm and policy version.
//   - POST /v1/outcome: outcome feedback for a decision (A/B statistics).
//   - GET /v1/ab: the A/B summary per arm.
//   - GET /v1/policies, POST /v1/policies (admin bearer token): the loaded
//     policies, and a new policy version for an arm.
//   - POST /filter, POST /prioritize: the Kubernetes scheduler extender
//     (types of k8s.io/kube-scheduler/extender/v1; scores 0-10).
//   - GET /metrics (Prometheus), GET /healthz, GET /readyz.
//
// Decisions are serialised on one lock around the model, which the
// schedulers' caches need as well; policy swaps are atomic and never wait
// for that lock. New policy versions come from a watched directory, a NATS
// JetStream object store bucket or the admin endpoint; each is validated
// (checksum, observation schema hash, finite weights, smoke decisions on
// canary states) before it replaces the arm's policy, and a refused
// candidate leaves the old one serving.
package serve
