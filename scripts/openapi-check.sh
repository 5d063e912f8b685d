#!/usr/bin/env bash
# The HTTP API's OpenAPI description (httpapi/openapi.json, served at
# GET /openapi.json) against its generated client and the server (issue #15):
#
#   scripts/openapi-check.sh              # both steps below
#   scripts/openapi-check.sh --no-tests   # step 1 alone (scripts/test.sh's go test runs step 2's tests)
#
#   1. Regenerates the client in a temp dir, with the //go:generate line of
#      clients/openapi/doc.go and the committed oapi-codegen.yaml, and
#      fails if the result differs from the committed client.gen.go: the
#      description and its client cannot drift. (To update the client after
#      changing the description: go generate ./clients/openapi/)
#   2. Runs the OpenAPI tests with the race detector: the description is
#      valid OpenAPI 3.1, describes every route the server registers and no
#      other, and every request and answer of every operation of a real
#      3-node cluster fits it (httpapi/openapi_test.go); the generated client
#      creates a sequence and reserves ranges on a real cluster
#      (clients/openapi/client_test.go).
#
# The generator runs with `go run ...@v2.8.2` (fetched into the module cache
# the first time, about a minute), so it never enters go.mod. The tests start
# in-process clusters; other cluster tests share the machine, so run it as
#   flock /tmp/ticketd-cluster-tests.lock scripts/openapi-check.sh
# Takes about 20 s once the generator is cached.
set -euo pipefail
cd "$(dirname "$0")/.."
run_tests=1
case ${1:-} in
  --no-tests) run_tests=0 ;;
  "") ;;
  *) echo "usage: scripts/openapi-check.sh [--no-tests]" >&2; exit 2 ;;
esac
pkg=clients/openapi

gen=$(grep -E '^//go:generate ' "$pkg/doc.go" | sed 's|^//go:generate ||')
if [[ $(grep -cE '^//go:generate ' "$pkg/doc.go") != 1 || $gen != *oapi-codegen* ]]; then
  echo "openapi-check: $pkg/doc.go must hold exactly one //go:generate line, running oapi-codegen" >&2
  exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ticketd-openapi.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# The same layout as the repository's, so that the line's
# ../../httpapi/openapi.json is the committed description.
mkdir -p "$tmp/$pkg" "$tmp/httpapi"
cp httpapi/openapi.json "$tmp/httpapi/openapi.json"
cp "$pkg/oapi-codegen.yaml" "$tmp/$pkg/"
echo "openapi-check: regenerating the client: $gen"
(cd "$tmp/$pkg" && eval "$gen")
if ! diff -u "$pkg/client.gen.go" "$tmp/$pkg/client.gen.go" >"$tmp/diff"; then
  echo "openapi-check: $pkg/client.gen.go is not what oapi-codegen makes of httpapi/openapi.json" >&2
  echo "openapi-check: run 'go generate ./$pkg/' and commit the result; the difference:" >&2
  head -n 100 "$tmp/diff" >&2
  exit 1
fi
echo "openapi-check: $pkg/client.gen.go is up to date"

if (( run_tests )); then
  go test -race -count=1 -run '^(TestOpenAPI_|TestGeneratedClient_)' ./httpapi "./$pkg"
fi
echo "openapi-check: passed"
