#!/usr/bin/env bash
# The planted bugs (the fault-injection suite's --unsafe-fault switches) live
# only in files built with -tags ticketd_faults. This checks both sides:
# the fault build vets and its planted-bug tests pass, and a production
# binary carries none of it.
set -euo pipefail
cd "$(dirname "$0")/.."
# The packages with a faults.go (fsm, issuer, cluster, server, cmd/ticketd,
# and client, whose Snowflake generator the nodes run).
mapfile -t pkgs < <(git ls-files '*faults.go' | grep -v '^jepsen/' | xargs -n1 dirname | sort -u | sed 's|^|./|')
go vet -tags ticketd_faults "${pkgs[@]}"
go test -tags ticketd_faults -count=1 -run 'Planted' "${pkgs[@]}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ldflags=$(scripts/version-ldflags.sh)
CGO_ENABLED=0 go build -ldflags "$ldflags" -o "$tmp/ticketd" ./cmd/ticketd
CGO_ENABLED=0 go build -ldflags "$ldflags" -tags ticketd_faults -o "$tmp/ticketd-faults" ./cmd/ticketd
# A symbol and a log line of each planted bug's code: present in the fault
# build (so the check itself works), absent from production.
check() { # name, found-in-fault-build, found-in-production
  if [[ $2 == 0 || $3 != 0 ]]; then
    echo "faults-build: $1: $2 in the fault build, $3 in production (want >0 and 0)" >&2; exit 1
  fi
}
sym() { go tool nm "$1" | grep -c "$2" || true; }
str() { grep -c "$2" "$1" || true; }
for s in 'issuer.(\*sequence).serveUncommitted' 'fsm.(\*FSM).PlantFaults' 'main.installClockControl' 'WithUnsafeFaults'; do
  check "$s" "$(sym "$tmp/ticketd-faults" "$s")" "$(sym "$tmp/ticketd" "$s")"
done
check "skip-barrier's warning" "$(str "$tmp/ticketd-faults" 'without a Barrier (planted')" "$(str "$tmp/ticketd" 'without a Barrier (planted')"
check "the --unsafe-fault flag" "$(str "$tmp/ticketd-faults" 'unsafe-fault')" "$(str "$tmp/ticketd" 'unsafe-fault')"
echo "faults-build: planted bugs only in the ticketd_faults build"
