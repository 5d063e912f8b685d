# shellcheck shell=bash
# Shared by scripts/jepsen*.sh (sourced, not run).

jepsen_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# jepsen_wait_idle waits (at most JEPSEN_WAIT_IDLE seconds, default 600)
# while other test runs or ticketd nodes use this machine's CPUs: a fault
# suite on a busy 2-core box measures the box, and slows the others down.
# JEPSEN_WAIT_IDLE=0 skips the wait.
jepsen_wait_idle() {
  local limit=${JEPSEN_WAIT_IDLE:-600} waited=0 busy
  while (( waited < limit )); do
    busy=$(pgrep -fa 'go test|ticketd serve|ticketd-bench' | grep -v -e pgrep -e "$$" || true)
    [[ -z $busy ]] && return 0
    (( waited == 0 )) && echo "jepsen: waiting (up to ${limit}s) for other runs to finish:" >&2 && echo "$busy" | head -5 >&2
    sleep 5; waited=$((waited + 5))
  done
  [[ $limit == 0 ]] || echo "jepsen: still busy after ${limit}s; running anyway" >&2
}

# jepsen_build builds the harness into build/jepsen/jepsen.
jepsen_build() {
  (cd "$jepsen_root" && go build -o build/jepsen/jepsen ./jepsen)
}

# jepsen_require_root: per-node network namespaces (partitions, slow and
# lossy links) need root.
jepsen_require_root() {
  if [[ $(id -u) != 0 && -z ${JEPSEN_ALLOW_LOOPBACK:-} ]]; then
    echo "jepsen: needs root for per-node network namespaces (partitions, delay, loss)." >&2
    echo "        Run as root, or set JEPSEN_ALLOW_LOOPBACK=1 to run without the network nemeses." >&2
    exit 2
  fi
}
