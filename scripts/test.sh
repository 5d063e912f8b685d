#!/usr/bin/env bash
# The project's test command (the README's, and what CI runs): formatting,
# vet, then every test with the race detector, including the in-process
# clusters and the tests that drive the built binary.
set -euo pipefail
cd "$(dirname "$0")/.."
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
scripts/modules.sh
# -p 1: packages that start clusters must not run side by side on a small machine.
go test -race -count=1 -p 1 -timeout 25m "$@" $packages
# Every fuzz target for a few seconds beyond its seed corpus (which the
# line above already ran as tests); scripts/fuzz.sh runs them for longer.
scripts/fuzz.sh --time "${FUZZ_TIME:-5s}"
# The benchmark in smoke mode, so it cannot rot: a few seconds of ticketd and
# the bare Echo handler; fails only on a correctness error (overlapping or
# mis-sized ranges, errors), never on slow numbers.
scripts/bench.sh --smoke
# The fault-injection suite's short schedule (5 processes in network
# namespaces, every nemesis kind once, < 5 minutes); fails on an invalid
# history.
scripts/jepsen-ci.sh
