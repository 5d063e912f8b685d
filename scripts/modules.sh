#!/usr/bin/env bash
# Checks the module split (issue #12): every module of go.work is tidy, and a
# program that imports only the SDK gets, in its module graph, the SDK, its
# wire types and its one retry library, nothing else; and package fsm does
# not import the wire package api (issue 48). CI runs it from
# scripts/test.sh; run it after changing any go.mod.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# Each module on its own, as a user or `go mod tidy` sees it: GOWORK=off, so
# the replace directives, not the workspace, tie it to its siblings.
for dir in $(go list -m -f '{{.Dir}}'); do
  if ! out=$(cd "$dir" && GOWORK=off go mod tidy -diff 2>&1); then
    echo "modules: ${dir#"$root"/} is not tidy (run: cd ${dir#"$root"/} && GOWORK=off go mod tidy):" >&2
    echo "$out" >&2
    exit 1
  fi
done

# The FSM decides by its own rules and numbers, frozen with the log format,
# never by the wire package's (api mirrors them; fsm's tests hold them equal).
if fsm_api=$(go list -deps ./fsm | grep -x 'github.com/ticketd/ticketd/api'); then
  echo "modules: package fsm imports the wire package api ($fsm_api), directly or through another; keep the numbers it decides by in fsm" >&2
  exit 1
fi

# A fresh program that uses the SDK, built outside the workspace.
user=$(mktemp -d "${TMPDIR:-/tmp}/ticketd-sdkuser.XXXXXX")
trap 'rm -rf "$user"' EXIT
cat >"$user/go.mod" <<MOD
module example.com/sdkuser

go 1.25

replace (
	github.com/ticketd/ticketd/api => $root/api
	github.com/ticketd/ticketd/client => $root/client
)
MOD
cat >"$user/main.go" <<'GO'
package main

import (
	"context"
	"fmt"

	"github.com/ticketd/ticketd/client"
)

func main() {
	c, err := client.New([]string{"http://127.0.0.1:8080"})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	fmt.Println(c.Sequence("orders").Next(context.Background()))
}
GO
(
  cd "$user"
  export GOWORK=off GOFLAGS=-mod=mod
  go get github.com/ticketd/ticketd/client@v0.0.0-00010101000000-000000000000 >/dev/null 2>&1 || true
  go mod tidy
  go build -o /dev/null .
  graph=$(go list -m all)
  echo "modules: go list -m all of a program that imports only the SDK:"
  echo "$graph" | sed "s|$root|<repo>|; s/^/  /"
  want=$'example.com/sdkuser\ngithub.com/cenkalti/backoff/v5\ngithub.com/ticketd/ticketd/api\ngithub.com/ticketd/ticketd/client'
  got=$(echo "$graph" | awk '{print $1}' | sort)
  if [[ "$got" != "$want" ]]; then
    echo "modules: the SDK's graph holds more than the SDK, its wire types and its retry library" >&2
    exit 1
  fi
)
echo "modules: every module tidy; fsm imports no api; the SDK's graph is the SDK, api and backoff"
