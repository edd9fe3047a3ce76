#!/usr/bin/env bash
# End-to-end check of tegrl serve as kube-scheduler's extender against a
# real control plane, everything on 127.0.0.1 (see docs/kubernetes.md):
#
#  1. builds kube-apiserver and kube-scheduler from k8s.io/kubernetes at the
#     version of the project's k8s.io modules (k8s.io/api v0.X.Y ->
#     v1.X.Y), in a module of its own under bin/e2e-kube/build (the staging
#     modules replaced by their published versions), once per version;
#  2. installs etcd (Debian's etcd-server) when missing;
#  3. starts etcd, kube-apiserver (certificates and tokens made here),
#     tegrl serve --kubeconfig and kube-scheduler with the extender
#     configuration of docs/kubernetes.md;
#  4. runs TestE2EKube (serve/kube/e2e_test.go, build tag e2ekube): 50
#     nodes, 200 pods of CPU and GPU shapes, every pod bound, no node
#     over-committed, tegrl's running jobs equal to the API's bound pods,
#     then deletes, a cordon and a removed node, then pod groups (ten
#     gangs bound whole, each on one GPU model and the fewest nodes; one
#     that never fits gets no pod bound); it prints pods/s and the
#     extender's latency percentiles.
#
# Environment: GO (default go), E2E_KEEP=1 keeps the work directory,
# E2E_SCHED_V sets kube-scheduler's log verbosity (default 2),
# E2E_OUT names a file for the figures (default bin/e2e-kube/result.txt).
set -euo pipefail

GO=${GO:-go}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BIN=$ROOT/bin/e2e-kube
OUT=${E2E_OUT:-$BIN/result.txt}
mkdir -p "$BIN"

log() { printf 'e2e-kube: %s\n' "$*" >&2; }

# --- 1. kube-apiserver and kube-scheduler ------------------------------
api_version=$(awk '$1 == "k8s.io/api" { print $2 }' go.mod)
[[ $api_version =~ ^v0\.([0-9]+)\.([0-9]+)$ ]] || { log "cannot read the k8s.io/api version from go.mod ($api_version)"; exit 1; }
kver="v1.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
stamp=$BIN/version
if [[ ! -x $BIN/kube-apiserver || ! -x $BIN/kube-scheduler || "$(cat "$stamp" 2>/dev/null)" != "$kver" ]]; then
	log "building kube-apiserver and kube-scheduler $kver (several minutes on two cores)"
	b=$BIN/build
	mkdir -p "$b"
	kmod=$(cd "$b" && GOFLAGS=-mod=mod $GO mod download -json "k8s.io/kubernetes@$kver" | awk -F'"' '$2 == "GoMod" { print $4 }')
	{
		printf 'module tegrl.local/e2e-kube-build\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$kver"
		sed -n "s#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/.*#\t\1 => \1 $api_version#p" "$kmod"
		printf ')\n'
	} >"$b/go.mod"
	printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "k8s.io/kubernetes/cmd/kube-apiserver"\n\t_ "k8s.io/kubernetes/cmd/kube-scheduler"\n)\n' >"$b/tools.go"
	(cd "$b" && GOFLAGS=-mod=mod $GO mod tidy && GOFLAGS=-mod=mod $GO build -trimpath -o "$BIN/" \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler)
	echo "$kver" >"$stamp"
fi

# --- 2. etcd, openssl, curl --------------------------------------------
need=()
command -v etcd >/dev/null || need+=(etcd-server)
command -v openssl >/dev/null || need+=(openssl)
command -v curl >/dev/null || need+=(curl)
if ((${#need[@]})); then
	log "installing ${need[*]}"
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

log "building tegrl"
$GO build -o "$ROOT/bin/tegrl" ./cmd/tegrl

# --- 3. the control plane and tegrl ------------------------------------
W=$(mktemp -d "${TMPDIR:-/tmp}/tegrl-e2e-kube.XXXXXX")
pids=()
cleanup() {
	local rc=$?
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	if ((rc != 0)); then
		for f in "$W"/*.log; do
			[[ -f $f ]] && { echo "--- $(basename "$f") (last 30 lines)"; tail -n 30 "$f"; } >&2
		done
	fi
	[[ ${E2E_KEEP:-} == 1 ]] && log "work directory kept: $W" || rm -rf "$W"
	exit $rc
}
trap cleanup EXIT

# A free loopback port.
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
	echo $((20000 + RANDOM % 20000)); }
ETCD_PORT=$(port); PEER_PORT=$(port); API_PORT=$(port); TEGRL_PORT=$(port)

# Certificates: a CA, the API server's serving certificate for
# 127.0.0.1, the service-account signing key; static bearer tokens for the
# administrator (the test), kube-scheduler and tegrl.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$W/ca.key" -out "$W/ca.crt" -days 1 -subj /CN=tegrl-e2e-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$W/api.key" -out "$W/api.csr" -subj /CN=kube-apiserver 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$W/san.ext"
openssl x509 -req -in "$W/api.csr" -CA "$W/ca.crt" -CAkey "$W/ca.key" -CAcreateserial -out "$W/api.crt" -days 1 -extfile "$W/san.ext" 2>/dev/null
openssl genrsa -out "$W/sa.key" 2048 2>/dev/null
openssl rsa -in "$W/sa.key" -pubout -out "$W/sa.pub" 2>/dev/null
tok() { openssl rand -hex 24; }
ADMIN_TOKEN=$(tok); SCHED_TOKEN=$(tok); TEGRL_TOKEN=$(tok)
{
	echo "$ADMIN_TOKEN,e2e-admin,1,system:masters"
	echo "$SCHED_TOKEN,system:kube-scheduler,2"
	echo "$TEGRL_TOKEN,tegrl,3"
} >"$W/tokens.csv"
kubeconfig() { # file token
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster: {server: "https://127.0.0.1:$API_PORT", certificate-authority: "$W/ca.crt"}
users:
- name: u
  user: {token: "$2"}
contexts:
- name: e2e
  context: {cluster: e2e, user: u}
current-context: e2e
EOF
}
kubeconfig "$W/admin.kubeconfig" "$ADMIN_TOKEN"
kubeconfig "$W/scheduler.kubeconfig" "$SCHED_TOKEN"
kubeconfig "$W/tegrl.kubeconfig" "$TEGRL_TOKEN"

wait_http() { # what url [token]
	local i
	for i in $(seq 1 600); do
		if curl -fsS --cacert "$W/ca.crt" ${3:+-H "Authorization: Bearer $3"} "$2" >/dev/null 2>&1; then return 0; fi
		sleep 0.2
	done
	log "$1 did not come up at $2"
	return 1
}

log "starting etcd on 127.0.0.1:$ETCD_PORT"
etcd --name e2e --data-dir "$W/etcd" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
	--advertise-client-urls "http://127.0.0.1:$ETCD_PORT" --listen-peer-urls "http://127.0.0.1:$PEER_PORT" \
	--initial-advertise-peer-urls "http://127.0.0.1:$PEER_PORT" --initial-cluster "e2e=http://127.0.0.1:$PEER_PORT" \
	>"$W/etcd.log" 2>&1 &
pids+=($!)
wait_http etcd "http://127.0.0.1:$ETCD_PORT/health"

log "starting kube-apiserver $kver on 127.0.0.1:$API_PORT"
# No controller manager runs here, so TaintNodesByCondition is off: it taints
# every new node not-ready, which only the node lifecycle controller lifts.
"$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --endpoint-reconciler-type none \
	--secure-port "$API_PORT" --tls-cert-file "$W/api.crt" --tls-private-key-file "$W/api.key" \
	--token-auth-file "$W/tokens.csv" --authorization-mode RBAC --anonymous-auth=false \
	--service-account-key-file "$W/sa.pub" --service-account-signing-key-file "$W/sa.key" \
	--service-account-issuer https://kubernetes.default.svc --service-cluster-ip-range 10.96.0.0/24 \
	--disable-admission-plugins ServiceAccount,TaintNodesByCondition --enable-priority-and-fairness=false >"$W/apiserver.log" 2>&1 &
pids+=($!)
wait_http kube-apiserver "https://127.0.0.1:$API_PORT/readyz" "$ADMIN_TOKEN"

# tegrl's RBAC, as docs/kubernetes.md gives it.
api() { curl -fsS --cacert "$W/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" -H 'Content-Type: application/json' "$@"; }
api -X POST "https://127.0.0.1:$API_PORT/apis/rbac.authorization.k8s.io/v1/clusterroles" -d '{
  "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "tegrl-extender"},
  "rules": [
    {"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]}]}' >/dev/null
api -X POST "https://127.0.0.1:$API_PORT/apis/rbac.authorization.k8s.io/v1/clusterrolebindings" -d '{
  "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "tegrl-extender"},
  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "tegrl-extender"},
  "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "tegrl"}]}' >/dev/null

log "starting tegrl serve --kubeconfig on 127.0.0.1:$TEGRL_PORT"
"$ROOT/bin/tegrl" serve --kubeconfig "$W/tegrl.kubeconfig" --listen "127.0.0.1:$TEGRL_PORT" --scheduler langevin \
	--log-level info >"$W/tegrl.log" 2>&1 &
pids+=($!)
wait_http "tegrl serve" "http://127.0.0.1:$TEGRL_PORT/healthz"

# The scheduler configuration of docs/kubernetes.md, with this run's
# addresses.
cat >"$W/scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: "$W/scheduler.kubeconfig"
leaderElection:
  leaderElect: false
extenders:
- urlPrefix: "http://127.0.0.1:$TEGRL_PORT"
  filterVerb: filter
  prioritizeVerb: prioritize
  bindVerb: bind
  weight: 5
  nodeCacheCapable: true
  httpTimeout: 5s
  ignorable: false
EOF
log "starting kube-scheduler $kver"
"$BIN/kube-scheduler" --config "$W/scheduler.yaml" --secure-port 0 -v "${E2E_SCHED_V:-2}" >"$W/scheduler.log" 2>&1 &
pids+=($!)

# --- 4. the check ---------------------------------------------------------
log "running TestE2EKube"
TEGRL_E2E_KUBECONFIG="$W/admin.kubeconfig" TEGRL_E2E_URL="http://127.0.0.1:$TEGRL_PORT" TEGRL_E2E_OUT="$OUT" \
	$GO test -tags e2ekube -count=1 -timeout 10m -run '^TestE2EKube$' -v ./serve/kube | grep -v '^=== RUN' >&2
log "figures in $OUT"
cat "$OUT"
