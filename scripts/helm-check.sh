#!/usr/bin/env bash
# Checks the Helm chart (deploy/helm/ticketd, issue 43) without a cluster:
#
#   1. the chartcheck module (deploy/helm/chartcheck) is tidy and vets clean;
#   2. the helm CLI at the version the module pins, built from the Go module
#      proxy (`go install helm.sh/helm/v3/cmd/helm@VERSION` into
#      ~/.cache/ticketd/helm, or $TICKETD_HELM_CACHE, built once per version
#      and machine), lints the chart with --strict
#      for several value sets, renders it for 3 and 5 replicas, and refuses
#      values the chart must refuse;
#   3. the module's tests: every case of the render matrix rendered with
#      Helm's engine and decoded strictly into the k8s.io/api types, the
#      chart's promises checked, each check shown able to fail by a mutated
#      copy of the chart, `helm lint` through Helm's own linter, and the
#      rendered command lines run against this repository's ticketd;
#   4. as root, the rehearsal (deploy/helm/chartcheck/rehearsal, DESIGN.md
#      §4.3): real ticketd processes from the rendered StatefulSet, one
#      network namespace and read-only root per pod, a kubelet's probes, the
#      client Service, a rolling restart, a pod moved to a new address and
#      3 -> 5 -> 3 -> 5 through the reconcile hook's command, under Go SDK
#      load (about a minute). Not root: skipped, and said so.
#
# Needs no cluster. The first run on a machine downloads the
# modules (about 150 MB) and compiles Helm (a few minutes on 2 cores); later
# runs take well under a minute. Each step is bounded by a timeout.
#   scripts/helm-check.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mod=$root/deploy/helm/chartcheck
chart=$root/deploy/helm/ticketd
kube=v1.31.0
# The module is outside go.work: Helm's and client-go's dependencies never
# reach the server's modules.
export GOWORK=off
start=$SECONDS

step() { echo "helm-check: $*"; }
# run LIMIT CMD...: prints the command, runs it bounded by LIMIT.
run() {
  local limit=$1; shift
  echo "+ $*" >&2
  timeout --foreground "$limit" "$@"
}
# Helm's loader logs the rules file's symlink on every load, and its linter
# logs each template `fail` it met as [INFO]: not news.
quiet() { grep -v 'found symbolic link\|\[INFO\] Fail:' || true; }

cd "$mod"
step "1/4 module tidy and vet (the module is outside go.work, so test.sh's go vet does not reach it)"
run 5m go mod tidy -diff
run 10m go vet ./...

version=$(go list -m -f '{{.Version}}' helm.sh/helm/v3)
# Kept outside the clone, as the module cache is: a clean clone on a machine
# that has built this version once does not build it again. The binary is
# what `go install` made of the checksummed module at that version.
bin=${TICKETD_HELM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ticketd/helm}/$version
step "2/4 helm CLI $version"
t0=$SECONDS
if [[ ! -x $bin/helm ]]; then
  # Outside any module: helm's own go.mod decides its dependencies, as for
  # a user who runs `go install`.
  (cd / && export GOBIN=$bin && run 20m go install "helm.sh/helm/v3/cmd/helm@$version")
fi
step "helm $version ready in $((SECONDS - t0)) s: $bin/helm"
helm() { run 2m "$bin/helm" "$@"; }
helm version --short
for set in "" "replicas=5" "tls.enabled=false,auth.existingSecret=tokens" \
  "metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,backup.enabled=true" \
  "tls.mode=certManager,auth.existingSecret=tokens" \
  "networkPolicy.apiFrom[0].podSelector.matchLabels.app=orders,networkPolicy.raftExtraFrom={10.20.0.0/16}" \
  "role=standby,standby.join={https://primary.example:8080},standby.raftAdvertise=dr.example:8090,standby.httpAdvertise=dr.example:8080,auth.existingSecret=primary-auth,tls.mode=existingSecret,tls.existingSecret=dr-tls"; do
  helm lint --strict --kube-version "$kube" "$chart" ${set:+--set "$set"} 2>&1 | quiet
done
out=$(mktemp -d "${TMPDIR:-/tmp}/helm-check.XXXXXX")
trap 'rm -rf "$out"' EXIT
for n in 3 5; do
  helm template r "$chart" --namespace ns --kube-version "$kube" --set replicas=$n 2> >(quiet >&2) >"$out/r$n.yaml"
  docs=$(grep -c '^kind: ' "$out/r$n.yaml")
  step "helm template replicas=$n: $docs objects"
done
# The pod template does not depend on replicas (DESIGN.md F11): the CLI's
# renders for 3 and 5 differ only in the StatefulSet's replica count and the
# reconcile hook's --replicas (the count it shrinks to).
if ! diff <(grep -v -e '^  replicas: ' -e '^            - --replicas=' "$out/r3.yaml") <(grep -v -e '^  replicas: ' -e '^            - --replicas=' "$out/r5.yaml") >/dev/null; then
  echo "helm-check: helm template for 3 and 5 replicas differs beyond spec.replicas:" >&2
  diff <(grep -v -e '^  replicas: ' -e '^            - --replicas=' "$out/r3.yaml") <(grep -v -e '^  replicas: ' -e '^            - --replicas=' "$out/r5.yaml") >&2 || true
  exit 1
fi
for bad in "replicas=4" "persistence.enabled=false" "tls.clientAuth=true" "image.tag=latest"; do
  if "$bin/helm" template r "$chart" --kube-version "$kube" --set "$bad" >/dev/null 2>&1; then
    echo "helm-check: helm template accepted --set $bad, which the chart must refuse" >&2
    exit 1
  fi
  step "helm template --set $bad: refused, as it must be"
done

step "3/4 go test (render matrix, strict decoding, checks, mutations, lint, ticketd's flags)"
run 20m go test -count=1 -timeout 15m ./... 2>&1 | quiet
if [[ $(id -u) == 0 ]]; then
  step "4/4 rehearsal: the rendered pods as real processes, under SDK load"
  run 10m env TICKETD_REHEARSAL=1 go test -count=1 -timeout 8m -v -run TestRehearsal ./rehearsal 2>&1 | quiet
else
  step "4/4 rehearsal: SKIPPED (it needs root for network namespaces; CI runs it)"
fi
step "passed in $((SECONDS - start)) s"
