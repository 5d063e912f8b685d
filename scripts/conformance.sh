#!/usr/bin/env bash
# The client libraries' conformance suite (issue 33; clients/conformance/README.md).
#
#   scripts/conformance.sh                 # go, python, python-asyncio and java: VALID runs (what CI runs)
#   scripts/conformance.sh go python       # some of them
#   scripts/conformance.sh --planted [...] # and each language's planted bugs, which must be caught
#
# The planted runs (about 40 s each) are out of CI since issue 35, for CI's
# time, as the fault suite's planted bugs are (scripts/jepsen-faults.sh):
# run them when a driver, the harness or its checks change.
# Builds ticketd and the harness once, builds each language's driver, runs
# the harness against it (it must be VALID), again in each further mode its
# library has (Go: --unordered; Python: --fork), then each of the language's planted bugs
# with --expect-fail (each must be caught). Go's planted bugs (the SDK's in
# unordered mode, and the driver's reservations out of order) need a fault
# build of the driver (-tags ticketd_faults), which --planted makes; the
# VALID runs use a driver that cannot switch one on. Runs serially: each
# run is a 3-node cluster of processes for about 40 s. A language named
# whose driver is missing is a FAILURE, not a skip: CI has every driver.
# On a shared machine run it under flock /tmp/ticketd-heavy.lock.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

planted=0
if [[ ${1:-} == --planted ]]; then
  planted=1
  shift
fi
langs=("$@")
if (( ${#langs[@]} == 0 )); then
  langs=(go python python-asyncio java)
fi

# Each language: its driver (after its build) and its planted bugs, each
# NAME or NAME:FLAG when the harness needs a flag of its own to reach it.
declare -A plants=(
  [go]="reserve-descending unordered-share-subrange:--unordered"
  [python]="prefetch-stops-after-error caches-kept-across-fork:--fork"
  [python-asyncio]="refill-wait-unshielded"
  [java]="range-twice-after-retry"
)
# Each language: the further runs it gets, each a harness flag (a run of its
# own): --unordered, the Go SDK's unordered mode (PROTOCOL.md's open modes);
# --fork, forked children beside the load, for a language whose programs
# fork (PROTOCOL.md's fork; Go and Java answer it unsupported).
declare -A modes=(
  [go]="--unordered"
  [python]="--fork"
  [python-asyncio]=""
  [java]=""
)
# A mode whose run holds the plain run whole replaces it, for CI's time:
# Python's --fork runs the same lanes 1-9 as the plain run, and lane 10's
# forks beside them (PROTOCOL.md's fork).
declare -A replaces_plain=(
  [python]="--fork"
)
for l in "${langs[@]}"; do
  [[ -v plants[$l] ]] || { echo "conformance: unknown language '$l' (go, python, python-asyncio, java)" >&2; exit 2; }
done

# Fail before the long builds if a driver named is missing.
missing=0
for l in "${langs[@]}"; do
  case $l in
    python) [[ -x clients/python/conformance/driver ]] || { echo "conformance: FAIL: python: no executable clients/python/conformance/driver" >&2; missing=1; } ;;
    python-asyncio) [[ -x clients/python/conformance/aio-driver ]] || { echo "conformance: FAIL: python-asyncio: no executable clients/python/conformance/aio-driver" >&2; missing=1; } ;;
    java) [[ -x clients/java/build.sh ]] || { echo "conformance: FAIL: java: no executable clients/java/build.sh (it builds the Java driver)" >&2; missing=1; } ;;
  esac
done
(( missing == 0 )) || exit 1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "conformance: building ticketd and the harness"
go build -o "$tmp/ticketd" ./cmd/ticketd
go build -o "$tmp/conformance" ./clients/conformance

driver_of() {
  case $1 in
    go)
      go build -o "$tmp/godriver" ./clients/conformance/godriver
      echo "$tmp/godriver" ;;
    python|python-asyncio)
      if [[ ! -x /usr/bin/python3 ]]; then
        if [[ $(id -u) == 0 ]]; then
          apt-get install -y python3 >&2 || { apt-get update >&2 && apt-get install -y python3 >&2; }
        else
          echo "conformance: /usr/bin/python3 is missing (apt-get install python3, as root)" >&2
          return 1
        fi
      fi
      if [[ $1 == python ]]; then
        echo "$root/clients/python/conformance/driver"
      else
        echo "$root/clients/python/conformance/aio-driver" # ticketd.aio: lanes as tasks of one event loop
      fi ;;
    java)
      # build.sh installs its own Debian packages, builds the library and
      # the driver; the wrapper then runs java with that classpath.
      clients/java/build.sh driver-classpath >&2
      [[ -x clients/java/conformance/driver ]] || { echo "conformance: no executable clients/java/conformance/driver after build.sh" >&2; return 1; }
      echo "$root/clients/java/conformance/driver" ;;
  esac
}

results=()
failed=0
run() { # run LABEL ARGS...: one harness run, bounded; records PASS/FAIL
  local label=$1; shift
  local start=$SECONDS rc=0
  echo "=== conformance: $label"
  timeout 180 "$tmp/conformance" --ticketd "$tmp/ticketd" "$@" || rc=$?
  if (( rc == 0 )); then
    results+=("PASS  $label  ($((SECONDS - start)) s)")
  else
    results+=("FAIL  $label  (exit $rc, $((SECONDS - start)) s)")
    failed=1
  fi
}

for l in "${langs[@]}"; do
  if ! d=$(driver_of "$l"); then
    results+=("FAIL  $l: driver build")
    failed=1
    continue
  fi
  [[ -n ${replaces_plain[$l]:-} ]] || run "$l" --name "$l" --driver "$d"
  for m in ${modes[$l]}; do
    run "$l ${m#--}" --name "$l" --driver "$d" "$m"
  done
  if (( planted )); then
    if [[ $l == go ]]; then
      go build -tags ticketd_faults -o "$tmp/godriver-faults" ./clients/conformance/godriver
      d=$tmp/godriver-faults
    fi
    for p in ${plants[$l]}; do
      flags=()
      [[ $p == *:* ]] && flags=("${p#*:}")
      run "$l plant ${p%%:*} caught" --name "$l" --driver "$d" --plant "${p%%:*}" "${flags[@]}" --expect-fail
    done
  fi
done

echo "=== conformance summary"
printf '%s\n' "${results[@]}"
exit $failed
