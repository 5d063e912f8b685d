#!/usr/bin/env bash
# Applies the Helm chart (deploy/helm/ticketd, issue 43) to a real API
# server, so that its own validation, its admission (PodSecurity
# "restricted", ServiceAccount, RBAC) and the controllers of
# kube-controller-manager see it. No kubelet and no scheduler run: pods stay
# Pending, which is all this needs.
#
#   1. builds kube-apiserver, kube-controller-manager and kubectl from
#      k8s.io/kubernetes at one version (KUBE_VERSION, default v1.34.4) in a
#      scratch module under build/kube/VERSION/mod that replaces every
#      k8s.io staging module by its published v0.X release; the binaries are
#      cached in build/kube/VERSION/bin. The helm CLI is the one
#      scripts/helm-check.sh builds (~/.cache/ticketd/helm/VERSION), built the same way
#      when missing; ticketd is built from this repository;
#   2. starts Debian's etcd and the two servers on loopback, with certificates
#      made here by openssl, a service-account signing key, static tokens (an
#      admin in system:masters, the controller manager as
#      system:kube-controller-manager), --authorization-mode=Node,RBAC and
#      --use-service-account-credentials;
#   3. server-side dry-runs `helm template` for the value sets
#      scripts/helm-check.sh lints (CRD kinds dropped: no CRDs here);
#   4. installs release r in namespace ns (PodSecurity enforce=restricted) as
#      Helm would: the hook RBAC, then the init hook's own command (ticketd
#      tls init --k8s-secret ...) run here with a token minted for the hook's
#      ServiceAccount, twice (the second run must change nothing), the hook
#      Job, then `helm install --no-hooks`; checks what the StatefulSet,
#      Job and disruption controllers did; upgrades to 5 replicas and back
#      to 3 (PVC retention whenScaled); backup.enabled=true (a Job made from
#      the CronJob); a standby release; `helm uninstall` (whenDeleted).
#
# Not in CI: too heavy, it builds Kubernetes. Needs root only to apt-get
# install etcd-server (and openssl) when they are missing. Measured on 2
# cores shared with other builds: the first run about 22 minutes (modules
# about 1 minute; kube-apiserver and kube-controller-manager 19 minutes under
# nice -n 19, kubectl 1.5 more; helm, when scripts/helm-check.sh has not
# built it, 8.5 more); later runs, binaries cached, 40 to 50 seconds. Every
# step is bounded by a timeout; every process started here is ended on exit
# (KEEP=1 keeps the temporary directory with the servers' logs).
#   scripts/helm-apiserver.sh            # KUBE_VERSION=v1.34.4 by default
#   CHART=/tmp/copy/ticketd scripts/helm-apiserver.sh   # try a changed copy
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
chart=${CHART:-$root/deploy/helm/ticketd}  # CHART=dir: a copy to try
kube_version=${KUBE_VERSION:-v1.34.4}
staging_version=v0.${kube_version#v1.}
kdir=$root/build/kube/$kube_version
kbin=$kdir/bin
# Loopback ports away from the defaults (etcd 2379/2380, apiserver 6443).
etcd_port=${ETCD_PORT:-23791}
etcd_peer_port=${ETCD_PEER_PORT:-23801}
api_port=${API_PORT:-26443}
export GOWORK=off
start=$SECONDS
passed=()

step() { echo "helm-apiserver: $*"; }
ok() { passed+=("$*"); echo "helm-apiserver: ok: $*"; }
fail() { echo "helm-apiserver: FAILED: $*" >&2; exit 1; }
run() {
  local limit=$1; shift
  echo "+ $*" >&2
  timeout --foreground "$limit" "$@"
}
# wait_for SECONDS WHAT CMD...: retries CMD every second until it succeeds.
wait_for() {
  local limit=$1 what=$2; shift 2
  local end=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < end)) || fail "$what: not within $limit s"
    sleep 1
  done
}

# ---------------------------------------------------------------- 1. build
step "1/5 binaries: Kubernetes $kube_version (staging modules $staging_version), helm, ticketd"
t0=$SECONDS
if [[ ! -x $kbin/kube-apiserver || ! -x $kbin/kube-controller-manager || ! -x $kbin/kubectl ]]; then
  mkdir -p "$kdir/mod" "$kbin"
  kmod=$(cd / && run 10m go mod download -json "k8s.io/kubernetes@$kube_version" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
  [[ -f $kmod ]] || fail "go mod download k8s.io/kubernetes@$kube_version gave no go.mod"
  # Kubernetes' own go.mod, as the scratch module's: the same requirements
  # and godebug; every `k8s.io/X => ./staging/src/k8s.io/X` becomes
  # `k8s.io/X => k8s.io/X v0.N.P`, the release published from that tree.
  sed -e 's#^module k8s.io/kubernetes$#module ticketd.local/kubebuild#' \
    -e "s#=> ./staging/src/\(k8s.io/[a-z0-9-]*\)\$#=> \1 $staging_version#" "$kmod" >"$kdir/mod/go.mod"
  grep -q 'staging/src' "$kdir/mod/go.mod" && fail "a staging replace is left in $kdir/mod/go.mod"
  printf '\nrequire k8s.io/kubernetes %s\n' "$kube_version" >>"$kdir/mod/go.mod"
  rm -f "$kdir/mod/go.sum"
  pkg=k8s.io/component-base/version
  ldflags="-s -w -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$(cut -d. -f2 <<<"$kube_version") -X $pkg.gitTreeState=clean"
  (cd "$kdir/mod" && run 60m nice -n 19 go build -mod=mod -buildvcs=false -o "$kbin/" -ldflags "$ldflags" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl)
  step "built in $((SECONDS - t0)) s"
fi
"$kbin/kube-apiserver" --version
helm_version=$(cd "$root/deploy/helm/chartcheck" && go list -m -f '{{.Version}}' helm.sh/helm/v3)
hbin=${TICKETD_HELM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ticketd/helm}/$helm_version
if [[ ! -x $hbin/helm ]]; then
  (cd / && export GOBIN=$hbin && run 20m nice -n 19 go install "helm.sh/helm/v3/cmd/helm@$helm_version")
fi
mkdir -p "$root/build/kube"
tbin=$root/build/kube/ticketd
(cd "$root" && run 10m nice -n 19 go build -o "$tbin" ./cmd/ticketd)
if ! command -v etcd >/dev/null || ! command -v openssl >/dev/null; then
  run 5m apt-get update >/dev/null
  DEBIAN_FRONTEND=noninteractive run 10m apt-get install -y etcd-server openssl >/dev/null
fi
ok "binaries: kube-apiserver, kube-controller-manager, kubectl $kube_version; helm $helm_version; $(etcd --version | head -1); ticketd (ready after $((SECONDS - t0)) s)"

# ---------------------------------------------------------------- 2. servers
tmp=$(mktemp -d /tmp/helm-apiserver.XXXXXX)
pids=()
# cleanup: ends the servers in reverse order (the API server shuts down
# slowly once etcd is gone), each given 15 s after SIGTERM. Each pid is a
# `timeout` wrapper, which passes the signal on to its server.
cleanup() {
  local i p n
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    p=${pids[i]}
    kill "$p" 2>/dev/null || continue
    for ((n = 0; n < 30; n++)); do
      kill -0 "$p" 2>/dev/null || break
      sleep 0.5
    done
    if kill -0 "$p" 2>/dev/null; then
      pkill -KILL -P "$p" 2>/dev/null || true
      kill -KILL "$p" 2>/dev/null || true
    fi
    wait "$p" 2>/dev/null || true
  done
  if [[ ${KEEP:-} == 1 ]]; then echo "helm-apiserver: kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap 'exit 130' INT TERM
# logs: the tail of each server's log, on a failure.
logs() {
  local f
  for f in "$tmp"/*.log; do echo "--- $f" >&2; tail -n 20 "$f" >&2; done
}
trap 'rc=$?; ((rc == 0)) || logs; cleanup' EXIT

step "2/5 etcd :$etcd_port, kube-apiserver :$api_port, kube-controller-manager (logs in $tmp)"
for port in "$etcd_port" "$etcd_peer_port" "$api_port"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then fail "127.0.0.1:$port is in use (set ETCD_PORT, ETCD_PEER_PORT, API_PORT)"; fi
done
pki=$tmp/pki
mkdir -p "$pki"
(
  cd "$pki"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=helm-apiserver-ca 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj /CN=kube-apiserver 2>/dev/null
  printf '%s\n' 'subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local' \
    'extendedKeyUsage=serverAuth' 'keyUsage=critical,digitalSignature,keyEncipherment' >san.ext
  openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt -days 2 -extfile san.ext 2>/dev/null
  openssl genrsa -out sa.key 2048 2>/dev/null
  openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
)
admin_token=$(openssl rand -hex 24)
kcm_token=$(openssl rand -hex 24)
printf '%s,admin,admin-uid,"system:masters"\n%s,system:kube-controller-manager,kcm-uid\n' "$admin_token" "$kcm_token" >"$pki/tokens.csv"
kubeconfig() { # kubeconfig FILE TOKEN
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: local
    cluster: {server: "https://127.0.0.1:$api_port", certificate-authority: "$pki/ca.crt"}
users:
  - name: u
    user: {token: "$2"}
contexts:
  - name: c
    context: {cluster: local, user: u}
current-context: c
EOF
}
kubeconfig "$tmp/admin.kubeconfig" "$admin_token"
kubeconfig "$tmp/kcm.kubeconfig" "$kcm_token"
export KUBECONFIG=$tmp/admin.kubeconfig
kc() { timeout --foreground 60s "$kbin/kubectl" "$@"; }
helm() { run 3m "$hbin/helm" "$@" 2> >(grep -v "found symbolic link" >&2); }
job_has_pod() { [[ -n $(kc -n "$1" get pods -l "batch.kubernetes.io/job-name=$2" -o name) ]]; }
pdb_expects() { [[ $(kc -n ns get pdb r-ticketd -o jsonpath='{.status.expectedPods}') == "$1" ]]; }

timeout 30m etcd --name h --data-dir "$tmp/etcd" \
  --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
  --initial-cluster "h=http://127.0.0.1:$etcd_peer_port" --listen-metrics-urls '' >"$tmp/etcd.log" 2>&1 &
pids+=($!)
wait_for 30 "etcd healthy" curl -sf "http://127.0.0.1:$etcd_port/health"
t0=$SECONDS
timeout 30m "$kbin/kube-apiserver" \
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$api_port" \
  --etcd-servers="http://127.0.0.1:$etcd_port" \
  --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
  --client-ca-file="$pki/ca.crt" --token-auth-file="$pki/tokens.csv" \
  --authorization-mode=Node,RBAC \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
  --service-cluster-ip-range=10.96.0.0/16 \
  --cert-dir="$tmp/apiserver-certs" --profiling=false >"$tmp/kube-apiserver.log" 2>&1 &
pids+=($!)
wait_for 120 "kube-apiserver /readyz" curl -sf --cacert "$pki/ca.crt" -H "Authorization: Bearer $admin_token" "https://127.0.0.1:$api_port/readyz"
ok "kube-apiserver $kube_version ready in $((SECONDS - t0)) s (RBAC, Node authorizer, default admission plugins)"
timeout 30m "$kbin/kube-controller-manager" \
  --kubeconfig="$tmp/kcm.kubeconfig" --authentication-kubeconfig="$tmp/kcm.kubeconfig" --authorization-kubeconfig="$tmp/kcm.kubeconfig" \
  --controllers='*' --use-service-account-credentials=true --leader-elect=false \
  --service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" \
  --cluster-signing-cert-file="$pki/ca.crt" --cluster-signing-key-file="$pki/ca.key" \
  --bind-address=127.0.0.1 --secure-port=0 --profiling=false >"$tmp/kube-controller-manager.log" 2>&1 &
pids+=($!)
for ns in ns dr dry; do
  kc create namespace "$ns" >/dev/null
  # The chart's pods must pass the "restricted" Pod Security Standard: enforced
  # on the pods the controllers create, warned about on the workloads.
  kc label namespace "$ns" pod-security.kubernetes.io/enforce=restricted pod-security.kubernetes.io/warn=restricted >/dev/null
done
wait_for 90 "the controller manager's serviceaccount controller (ns/default)" kc -n ns get serviceaccount default
ok "kube-controller-manager running: ServiceAccount ns/default made"

# ---------------------------------------------------------------- 3. dry runs
step "3/5 server-side dry run of helm template for each value set"
# drop_crd_kinds: the rendered stream less the kinds whose CRDs are absent.
drop_crd_kinds() {
  awk 'BEGIN { RS = "\n---"; ORS = "\n---" } !/\nkind: (ServiceMonitor|PrometheusRule|Certificate|Issuer|ClusterIssuer)\n/'
}
i=0
for set in "" "replicas=5" "tls.enabled=false,auth.existingSecret=tokens" \
  "metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,backup.enabled=true" \
  "tls.mode=certManager,auth.existingSecret=tokens" \
  "networkPolicy.apiFrom[0].podSelector.matchLabels.app=orders,networkPolicy.raftExtraFrom={10.20.0.0/16}" \
  "role=standby,standby.join={https://primary.example:8080},standby.raftAdvertise=dr.example:8090,standby.httpAdvertise=dr.example:8080,auth.existingSecret=primary-auth,tls.mode=existingSecret,tls.existingSecret=dr-tls"; do
  i=$((i + 1))
  f=$tmp/dry$i.yaml
  "$hbin/helm" template r "$chart" --namespace dry --kube-version "$kube_version" ${set:+--set "$set"} 2>/dev/null | drop_crd_kinds >"$f"
  kinds=$(grep '^kind: ' "$f" | sed 's/kind: //' | sort | uniq -c | awk '{printf "%s%s×%s", sep, $2, $1; sep=" "}')
  if ! out=$(kc apply --dry-run=server -n dry -f "$f" 2>&1); then
    echo "$out" >&2
    fail "server dry run refused the chart with --set '${set}'"
  fi
  if grep -i 'warning' <<<"$out" >&2; then fail "server dry run warned with --set '${set}'"; fi
  ok "dry run --set '${set:-(defaults)}': accepted, no warning: $kinds"
done

# ---------------------------------------------------------------- 4. install
step "4/5 install r in ns as Helm would, hooks done by hand"
render() { "$hbin/helm" template r "$chart" --namespace ns --kube-version "$kube_version" "$@" 2>/dev/null; }
render --show-only templates/hooks-rbac.yaml >"$tmp/hooks-rbac.yaml"
kc apply -n ns -f "$tmp/hooks-rbac.yaml"
ok "hook ServiceAccount, Role, RoleBinding (weight -10) accepted"

# The init hook's own command, run here as its pod would: the Job's args as
# the API server stored them, a token for the hook's ServiceAccount.
render --show-only templates/hook-init.yaml >"$tmp/hook-init.yaml"
kc apply -n ns --dry-run=server -f "$tmp/hook-init.yaml" >/dev/null
mapfile -t hook_args < <(kc create -n ns --dry-run=server -f "$tmp/hook-init.yaml" -o go-template='{{range (index .spec.template.spec.containers 0).args}}{{.}}{{"\n"}}{{end}}')
((${#hook_args[@]} > 2)) || fail "no args read from the init hook Job"
sa=$tmp/sa
mkdir -p "$sa"
kc create token r-ticketd-hook -n ns --duration=10m >"$sa/token"
cp "$pki/ca.crt" "$sa/ca.crt"
printf ns >"$sa/namespace"
hook() {
  KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=$api_port \
    timeout --foreground 2m "$tbin" "${hook_args[@]}" --k8s-service-account-dir="$sa"
}
echo "+ ticketd ${hook_args[*]} (as system:serviceaccount:ns:r-ticketd-hook)" >&2
hook | tee "$tmp/hook1.out" || fail "the init hook's command failed under the hook's RBAC (above)"
versions() { kc -n ns get secret r-ticketd-ca r-ticketd-tls r-ticketd-auth -o go-template='{{range .items}}{{.metadata.name}}={{.metadata.resourceVersion}} {{end}}'; }
v1=$(versions)
ok "init hook run 1 as the hook's ServiceAccount: created r-ticketd-ca, r-ticketd-tls, r-ticketd-auth"
hook | tee "$tmp/hook2.out" || fail "the init hook's second run failed"
v2=$(versions)
[[ $v1 == "$v2" ]] || fail "the init hook's second run changed Secrets: $v1 -> $v2"
ok "init hook run 2: changed nothing (resourceVersions $v2)"
keys() { kc -n ns get secret "$1" -o go-template='{{range $k, $v := .data}}{{$k}} {{end}}'; }
want_tls="ca.pem"
for n in 0 1 2 3 4; do want_tls+=" r-ticketd-$n-key.pem r-ticketd-$n.pem"; done
[[ $(keys r-ticketd-tls | xargs -n1 | sort | xargs) == $(xargs -n1 <<<"$want_tls" | sort | xargs) ]] || fail "r-ticketd-tls keys: $(keys r-ticketd-tls)"
[[ $(keys r-ticketd-ca) == "ca-key.pem ca.pem " ]] || fail "r-ticketd-ca keys: $(keys r-ticketd-ca)"
[[ $(keys r-ticketd-auth) == "admin.token reserve.token tokens " ]] || fail "r-ticketd-auth keys: $(keys r-ticketd-auth)"
kc -n ns get secret r-ticketd-tls -o jsonpath='{.data.ca\.pem}' | base64 -d >"$tmp/ca.pem"
kc -n ns get secret r-ticketd-tls -o jsonpath='{.data.r-ticketd-0\.pem}' | base64 -d >"$tmp/n0.pem"
openssl verify -CAfile "$tmp/ca.pem" "$tmp/n0.pem" >/dev/null || fail "r-ticketd-0.pem is not signed by ca.pem"
sans=$(openssl x509 -in "$tmp/n0.pem" -noout -ext subjectAltName | tail -n +2 | xargs)
grep -q 'DNS:r-ticketd-0.r-ticketd-peers.ns.svc' <<<"$sans" || fail "r-ticketd-0.pem names: $sans"
ok "Secrets hold what the pods mount: r-ticketd-tls {ca.pem, r-ticketd-N.pem, r-ticketd-N-key.pem for N<5}, r-ticketd-ca {ca.pem, ca-key.pem}, r-ticketd-auth {tokens, admin.token, reserve.token}; r-ticketd-0.pem verifies against ca.pem, names: $sans"
as_hook=(--as=system:serviceaccount:ns:r-ticketd-hook -n ns)
for q in "get secret/r-ticketd-ca" "update secret/r-ticketd-tls" "create secrets"; do
  kc auth can-i $q "${as_hook[@]}" >/dev/null || fail "the hook's ServiceAccount may not: $q"
done
for q in "get secret/other" "list secrets" "update secret/other" "delete secret/r-ticketd-ca"; do
  if kc auth can-i $q "${as_hook[@]}" >/dev/null 2>&1; then fail "the hook's ServiceAccount may: $q"; fi
done
ok "the hook's ServiceAccount may get/update its Secrets and create Secrets, and may not get/update another Secret, list Secrets or delete its own"

kc apply -n ns -f "$tmp/hook-init.yaml" >/dev/null
wait_for 60 "the Job controller's pod for r-ticketd-init" job_has_pod ns r-ticketd-init
hp=$(kc -n ns get pods -l batch.kubernetes.io/job-name=r-ticketd-init -o jsonpath='{.items[0].metadata.name}')
mnt=$(kc -n ns get pod "$hp" -o jsonpath='{.spec.containers[0].volumeMounts[?(@.mountPath=="/var/run/secrets/kubernetes.io/serviceaccount")].name} {.spec.serviceAccountName}')
[[ $mnt == "kube-api-access-"*" r-ticketd-hook" ]] || fail "the init hook's pod $hp has no service-account token of r-ticketd-hook mounted: $mnt"
ok "hook Job r-ticketd-init (weight -5) accepted; the Job controller made its pod $hp (Pending: no scheduler), PodSecurity restricted admitted it, and the ServiceAccount admission mounted r-ticketd-hook's token where ticketd reads it"
# As Helm does once the hooks succeeded (hook-delete-policy hook-succeeded).
kc -n ns delete job r-ticketd-init --cascade=background >/dev/null
kc -n ns delete -f "$tmp/hooks-rbac.yaml" >/dev/null

helm --kubeconfig "$KUBECONFIG" install r "$chart" -n ns --no-hooks >"$tmp/install.out"
ok "helm install --no-hooks r: $(kc -n ns get statefulset,svc,pdb,networkpolicy -o name | xargs)"

pods_are() { # pods_are N...: exactly these ordinals exist
  local want="" n
  for n in "$@"; do want+="r-ticketd-$n "; done
  [[ $(kc -n ns get pods -l app.kubernetes.io/component=server -o go-template='{{range .items}}{{.metadata.name}} {{end}}') == "$want" ]]
}
pvcs_are() {
  local want="" n
  for n in "$@"; do want+="data-r-ticketd-$n "; done
  [[ $(kc -n ns get pvc -o go-template='{{range .items}}{{if not .metadata.deletionTimestamp}}{{.metadata.name}} {{end}}{{end}}' | xargs -n1 | grep '^data-' | xargs -r printf '%s ') == "$want" ]]
}
wait_for 60 "StatefulSet pods r-ticketd-0..2" pods_are 0 1 2
wait_for 30 "PVCs data-r-ticketd-0..2" pvcs_are 0 1 2
ok "StatefulSet controller: pods r-ticketd-0..2 and PVCs data-r-ticketd-0..2 made (Pending: no scheduler, no StorageClass)"
sts_args=$(kc -n ns get statefulset r-ticketd -o jsonpath='{.spec.template.spec.containers[0].args}')
for n in 0 1 2; do
  p=r-ticketd-$n
  [[ $(kc -n ns get pod $p -o jsonpath='{.spec.containers[0].args}') == "$sts_args" ]] || fail "$p args differ from the template's"
  [[ $(kc -n ns get pod $p -o jsonpath='{.spec.containers[0].env[*].name}') == "POD_NAME POD_NAMESPACE POD_IP GOMEMLIMIT" ]] || fail "$p env"
  [[ $(kc -n ns get pod $p -o jsonpath='{.spec.containers[0].startupProbe.httpGet.path} {.spec.containers[0].readinessProbe.httpGet.path} {.spec.containers[0].readinessProbe.httpGet.scheme}') == "/livez /readyz HTTPS" ]] || fail "$p probes"
  [[ $(kc -n ns get pod $p -o jsonpath='{.spec.securityContext.runAsUser} {.spec.securityContext.runAsNonRoot} {.spec.containers[0].securityContext.readOnlyRootFilesystem} {.spec.containers[0].securityContext.capabilities.drop}') == '65532 true true ["ALL"]' ]] || fail "$p securityContext"
  [[ $(kc -n ns get pod $p -o jsonpath='{.spec.volumes[?(@.name=="tls")].secret.secretName} {.spec.volumes[?(@.name=="data")].persistentVolumeClaim.claimName} {.spec.automountServiceAccountToken}') == "r-ticketd-tls data-$p false" ]] || fail "$p volumes: $(kc -n ns get pod $p -o jsonpath='{.spec.volumes}')"
  [[ " $(keys r-ticketd-tls)" == *" $p.pem "* && " $(keys r-ticketd-tls)" == *" $p-key.pem "* ]] || fail "r-ticketd-tls lacks $p.pem or $p-key.pem"
done
ok "pods r-ticketd-0..2: the template's args, env POD_NAME POD_NAMESPACE POD_IP GOMEMLIMIT, probes /livez /readyz over HTTPS, runAsUser 65532, read-only root, caps dropped, tls=r-ticketd-tls (holds their .pem/-key.pem), data=data-<pod>, no SA token"

pdb() { kc -n ns get pdb r-ticketd -o jsonpath='{.status.expectedPods} {.status.currentHealthy} {.status.desiredHealthy} {.status.disruptionsAllowed}'; }
wait_for 60 "the disruption controller's status for 3 pods" pdb_expects 3
read -r expected healthy desired allowed <<<"$(pdb)"
[[ "$expected $healthy $desired $allowed" == "3 0 2 0" ]] || fail "PDB status expectedPods currentHealthy desiredHealthy disruptionsAllowed = $expected $healthy $desired $allowed, want 3 0 2 0"
ok "disruption controller: PDB expectedPods=3 currentHealthy=0 desiredHealthy=2 disruptionsAllowed=0 (no pod Ready)"

# The upgrade's pre-upgrade hooks, in Helm's order: the RBAC again (weight
# -10), the init hook (-5: a third run, which must change nothing, with a
# token of the re-made ServiceAccount), then the scale-down hook (5), whose
# Job only is checked here (it talks to ticketd, which does not run here).
kc apply -n ns -f "$tmp/hooks-rbac.yaml" >/dev/null
kc create token r-ticketd-hook -n ns --duration=10m >"$sa/token"
hook >"$tmp/hook3.out" || { cat "$tmp/hook3.out"; fail "the init hook's run at upgrade failed"; }
[[ $(versions) == "$v1" ]] || fail "the init hook's run at upgrade changed Secrets: $v1 -> $(versions)"
render --set replicas=5 --show-only templates/hook-reconcile.yaml >"$tmp/hook-reconcile.yaml"
kc apply -n ns -f "$tmp/hook-reconcile.yaml" >/dev/null
wait_for 60 "the Job controller's pod for r-ticketd-reconcile" job_has_pod ns r-ticketd-reconcile
rp=$(kc -n ns get pods -l batch.kubernetes.io/job-name=r-ticketd-reconcile -o jsonpath='{.items[0].metadata.name}')
[[ $(kc -n ns get pod "$rp" -o jsonpath='{.spec.containers[0].volumeMounts[*].mountPath}') == "/tmp /etc/ticketd/auth /tls" ]] ||
  fail "the reconcile hook's pod mounts: $(kc -n ns get pod "$rp" -o jsonpath='{.spec.containers[0].volumeMounts[*].mountPath}')"
ok "pre-upgrade hooks: RBAC re-made, init hook run 3 changed nothing, reconcile Job's pod $rp made (mounts /tmp, the admin token, ca.pem; no service-account token)"
kc -n ns delete job r-ticketd-reconcile --cascade=background >/dev/null
kc -n ns delete -f "$tmp/hooks-rbac.yaml" >/dev/null
helm --kubeconfig "$KUBECONFIG" upgrade r "$chart" -n ns --no-hooks --set replicas=5 >/dev/null
wait_for 60 "pods r-ticketd-0..4" pods_are 0 1 2 3 4
wait_for 30 "PVCs data-r-ticketd-0..4" pvcs_are 0 1 2 3 4
wait_for 60 "PDB expectedPods 5" pdb_expects 5
ok "upgrade --no-hooks replicas=5: pods and PVCs 3, 4 made; PDB now $(pdb) (expected healthy desired allowed)"
uid0=$(kc -n ns get pod r-ticketd-0 -o jsonpath='{.metadata.uid}')
helm --kubeconfig "$KUBECONFIG" upgrade r "$chart" -n ns --no-hooks --set replicas=3 >/dev/null
wait_for 60 "pods back to r-ticketd-0..2" pods_are 0 1 2
wait_for 60 "PVCs data-r-ticketd-3,4 deleted (whenScaled: Delete)" pvcs_are 0 1 2
[[ $(kc -n ns get pod r-ticketd-0 -o jsonpath='{.metadata.uid}') == "$uid0" ]] || fail "the scale rolled pod r-ticketd-0"
ok "upgrade --no-hooks replicas=3: pods 3, 4 deleted, their PVCs deleted (whenScaled: Delete), 0..2 kept (not rolled)"

helm --kubeconfig "$KUBECONFIG" upgrade r "$chart" -n ns --no-hooks --set backup.enabled=true >/dev/null
cj=$(kc -n ns get cronjob -o name)
[[ -n $cj ]] || fail "no CronJob with backup.enabled=true"
kc -n ns create job r-backup-now --from="$cj" >/dev/null
wait_for 60 "the Job controller's pod for r-backup-now" job_has_pod ns r-backup-now
ok "upgrade --no-hooks backup.enabled=true: $cj and $(kc -n ns get pvc -o name | grep -v data- | xargs) accepted; a Job made from the CronJob got its pod (restricted admitted it)"

helm --kubeconfig "$KUBECONFIG" install r "$chart" -n dr --no-hooks \
  --set "role=standby,standby.join={https://primary.example:8080},standby.raftAdvertise=dr.example:8090,standby.httpAdvertise=dr.example:8080,auth.existingSecret=primary-auth,tls.mode=existingSecret,tls.existingSecret=dr-tls" >/dev/null
wait_for 60 "the standby's pod dr/r-ticketd-0" kc -n dr get pod r-ticketd-0
[[ $(kc -n dr get pods -o name | xargs) == "pod/r-ticketd-0" ]] || fail "standby pods: $(kc -n dr get pods -o name | xargs)"
ok "standby release in dr: $(kc -n dr get statefulset,svc,networkpolicy,pdb -o name 2>/dev/null | xargs); one pod r-ticketd-0"

helm --kubeconfig "$KUBECONFIG" uninstall r -n ns --no-hooks >/dev/null
wait_for 60 "the pods gone after uninstall" pods_are
sleep 5
pvcs_are 0 1 2 || fail "PVCs after uninstall: $(kc -n ns get pvc -o name | xargs), want data-r-ticketd-0..2 kept (whenDeleted: Retain)"
ok "helm uninstall: StatefulSet and pods gone, PVCs data-r-ticketd-0..2 kept (whenDeleted: Retain)"

# ---------------------------------------------------------------- 5. logs
step "5/5 warnings the controllers logged about the release"
warn=$(kc get events -A --field-selector type=Warning -o go-template='{{range .items}}{{.involvedObject.namespace}}/{{.involvedObject.kind}}/{{.involvedObject.name}}: {{.reason}}: {{.message}}{{"\n"}}{{end}}' | sort | uniq -c || true)
echo "${warn:-(none)}"
if grep -q 'FailedCreate' <<<"$warn"; then fail "a controller failed to create an object (above)"; fi
ok "no FailedCreate event"

echo
step "summary, Kubernetes $kube_version, $((SECONDS - start)) s:"
printf '  %s\n' "${passed[@]}"
step "passed"
