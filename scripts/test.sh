#!/usr/bin/env bash
# The project's tests.
#
#   scripts/test.sh                  # stage 1: fast and complete, needs no root
#   scripts/test.sh --fault-suite    # stage 1, then stage 2 (what CI runs: .ci/run)
#   scripts/test.sh -run TestX       # anything else goes to go test
#
# Stage 1: formatting, vet, the module checks, the fault build's check,
# every unit and integration
# test with the race detector (in-process clusters, and the tests that drive
# the built binary as processes), redis-cli and Python's redis against the
# Redis-protocol front, the Python and Java clients' tests and the clients'
# conformance suite, every fuzz target for a few seconds, and the
# benchmark in smoke mode.
#
# Stage 2: the fault-injection suite's CI schedule (scripts/jepsen-ci.sh):
# 5 ticketd processes, every nemesis kind once (kills, pauses, partitions,
# slow and lossy links, membership changes, clock steps), under every
# workload; it checks that no ID is issued twice, no range is lost, every
# read is linearizable, no Snowflake worker id has two holders, leases are
# idempotent, and a backup restores into a fresh cluster without overlap.
# It NEEDS ROOT: the partition and link nemeses run each node in a network
# namespace of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
fault_suite=0
if [[ ${1:-} == --fault-suite ]]; then
  fault_suite=1
  shift
fi
if (( fault_suite )) && [[ $(id -u) != 0 ]]; then
  echo "test.sh: --fault-suite needs root (each node runs in its own network namespace for the" >&2
  echo "         partition and link nemeses). Run stage 1 alone with scripts/test.sh." >&2
  exit 2
fi

# Several steps install Debian packages when they are missing. Another
# apt-get on the machine (an unattended upgrade, a developer's install)
# holds dpkg's lock for a while: wait for it, up to 10 minutes, instead of
# failing at once. APT_CONFIG is read by every apt-get below, in addition
# to the system's configuration.
apt_conf=$(mktemp "${TMPDIR:-/tmp}/ticketd-apt.XXXXXX")
trap 'rm -f "$apt_conf"' EXIT
echo 'DPkg::Lock::Timeout "600";' >"$apt_conf"
export APT_CONFIG=$apt_conf

# timed CMD...: runs a step and says how long it took (CI's 30-minute
# budget is spent here; the log shows where).
timed() {
  local t0=$SECONDS
  "$@"
  echo "== $1 took $((SECONDS - t0)) s (stage so far $((SECONDS - stage_start)) s)"
}
stage_start=$SECONDS

echo "== stage 1: formatting, vet, modules, tests (fuzz seeds included) and benchmark smoke"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [[ -n "$unformatted" ]]; then
  echo "gofmt would change:" >&2; echo "$unformatted" >&2; exit 1
fi
# Every module of go.work: the server (.), api, client (the SDK), the
# benchmark command and the fault suite. A bare ./... would stop at the
# nested modules' go.mod files.
packages=$(go list -m -f '{{.Dir}}/...')
go vet $packages
# Each module tidy, and the SDK's module graph small (issue #12).
timed scripts/modules.sh
# The Helm chart (issue 43): a module outside go.work, so the go vet and go
# test lines here do not reach it. Lint, render matrix, strict decoding, the
# chart's promises, the rendered flags against this ticketd (~1 min warm; the
# first run on a machine also builds Helm).
timed scripts/helm-check.sh
# The planted bugs build only with -tags ticketd_faults, and production
# binaries carry none of them.
timed scripts/faults-build.sh
# The status page's browser test (ui/browser_test.go) drives headless Chromium:
# scripts/browser-deps.sh installs Debian's when it is missing and prints its
# path; naming it in TICKETD_CHROMIUM makes the test fail rather than skip.
TICKETD_CHROMIUM=${TICKETD_CHROMIUM:-$(scripts/browser-deps.sh)}
export TICKETD_CHROMIUM
# The migrate tests (issue #16) start real PostgreSQL and MariaDB servers of
# their own: scripts/migrate-deps.sh installs Debian's when missing, and
# TICKETD_REQUIRE_DBS makes the tests fail rather than skip without them.
timed scripts/migrate-deps.sh
export TICKETD_REQUIRE_DBS=1
# Every test binary is built first, two at a time: compiling and linking
# upset no test's timing, and the go test line below finds them in the
# build cache. (That line, at -p 1, would otherwise build each package only
# after the one before it has finished its tests: about 250 s on a cold
# machine, half of it saved here.)
build_race_tests() {
  local dir
  dir=$(mktemp -d "${TMPDIR:-/tmp}/ticketd-testbins.XXXXXX")
  go test -race -c -p 2 -o "$dir/" "$@" >/dev/null || { rm -rf "$dir"; return 1; }
  rm -rf "$dir"
}
timed build_race_tests $packages
# -p 1: packages that start clusters must not run side by side on a small
# machine. atexit_sleep_ms=0: the race runtime otherwise sleeps a second
# before each of the 35 test binaries exits, in case a goroutine still
# running races in that second; a race while the tests run is reported
# when it happens, and the packages that start servers fail a test that
# leaves a goroutine behind (goleak in their TestMain).
GORACE="atexit_sleep_ms=0${GORACE:+ $GORACE}" timed go test -race -count=1 -p 1 -timeout 25m "$@" $packages
# Real Redis clients of two more languages (redis-cli, Python's redis; Go's
# go-redis runs in the go test line above) against the Redis-protocol front
# of a 3-process cluster, through a leader SIGKILL; installs redis-tools and
# python3-redis from Debian when they are missing.
timed scripts/resp-clients.sh
# The Python and Java client libraries' own unit tests, each in its runner
# (Debian's python3-pytest; JUnit 5 through Maven with Debian's repository),
# installed from Debian when missing.
timed scripts/clients-test.sh
# The client conformance suite (clients/conformance): the Go, Python (threads and asyncio) and Java
# libraries, each through its driver, against 3 ticketd processes while the
# leader is killed and paused and nodes restart; no ID twice, order per
# handle, a bounded wait, typed errors, recovery, a clean close; the Go SDK
# in both its modes. (The planted bugs: scripts/conformance.sh --planted.)
timed scripts/conformance.sh
# The alerting rules' unit tests (promtool, installed from Debian when
# missing), the example scrape config, and the dashboard; fails when a metric,
# label or route they name is renamed in the Go source.
timed scripts/alerts-test.sh
# Every fuzz target's seed corpus ran above, as tests. Fuzzing beyond it
# is opt-in (FUZZ_TIME=1s scripts/test.sh): its instrumented builds took
# 263 s of CI's 30 minutes (CI of c5eb461) for 1 s of fuzzing per target.
# scripts/fuzz.sh fuzzes for as long as you like.
if [[ -n ${FUZZ_TIME:-} ]]; then
  timed scripts/fuzz.sh --time "$FUZZ_TIME"
fi
# The benchmark in smoke mode, so it cannot rot: a few seconds of ticketd and
# the bare Echo handler; fails only on a correctness error (overlapping or
# mis-sized ranges, errors), never on slow numbers.
timed scripts/bench.sh --smoke
echo "== stage 1 passed"

if (( fault_suite )); then
  echo "== stage 2: the fault-injection suite's CI schedule (root; under 5 minutes)"
  timed scripts/jepsen-ci.sh
  echo "== stage 2 passed"
fi
