#!/usr/bin/env bash
# The HTTP API's OpenAPI description (httpapi/openapi.json, served at
# GET /openapi.json) against the server and a client generated from it
# (issues #15 and #48):
#
#   scripts/openapi-check.sh
#
# Runs the OpenAPI tests with the race detector (scripts/test.sh's go test
# line runs them too):
#   - the description is valid OpenAPI 3.1, describes every route the server
#     registers and no other, and every request and answer of every
#     operation of a real 3-node cluster fits it (httpapi/openapi_test.go);
#   - a Go client generated from it by oapi-codegen (pinned as a tool in
#     clients/openapi/testdata/module/go.mod) in a temporary directory
#     builds, vets, and creates a sequence and reserves ranges on a real
#     cluster (clients/openapi/client_test.go). No generated code is
#     committed, so there is nothing to regenerate after changing the
#     description.
#
# The first run builds the generator (about a minute); later runs take it
# from the build cache. The tests start in-process clusters; other cluster
# tests share the machine, so run it as
#   flock /tmp/ticketd-cluster-tests.lock scripts/openapi-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if (( $# )); then
  echo "usage: scripts/openapi-check.sh" >&2; exit 2
fi
go test -race -count=1 -run '^(TestOpenAPI_|TestGeneratedClient_)' ./httpapi ./clients/openapi
echo "openapi-check: passed"
