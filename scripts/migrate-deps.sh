#!/usr/bin/env bash
# Installs what the migrate tests (migrate/, cmd/ticketd/migrate_test.go)
# need: Debian's PostgreSQL and MariaDB server packages. The tests start
# private servers of their own (initdb + postgres, mariadb-install-db +
# mariadbd in temp dirs on loopback ports); nothing here starts a service.
# Idempotent and quiet: does nothing when both are there.
#
#   scripts/migrate-deps.sh && TICKETD_REQUIRE_DBS=1 go test ./migrate/ ./cmd/ticketd/
#
# With TICKETD_REQUIRE_DBS=1 the tests fail when a server is missing; without
# it they skip, naming this script.
set -euo pipefail

have_pg() { compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null && compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null; }
have_maria() {
  { command -v mariadb-install-db || command -v mysql_install_db; } >/dev/null 2>&1 &&
    { command -v mariadbd || [[ -x /usr/sbin/mariadbd ]] || command -v mysqld || [[ -x /usr/sbin/mysqld ]]; } >/dev/null 2>&1
}

pkgs=()
have_pg || pkgs+=(postgresql)
have_maria || pkgs+=(mariadb-server)
(( ${#pkgs[@]} == 0 )) && exit 0

sudo=()
if [[ $(id -u) != 0 ]]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "migrate-deps.sh: ${pkgs[*]} missing and installing needs root (no sudo here)" >&2
    exit 1
  fi
  sudo=(sudo)
fi
echo "migrate-deps.sh: installing Debian's ${pkgs[*]}" >&2
log=$(mktemp "${TMPDIR:-/tmp}/migrate-deps.XXXXXX")
trap 'rm -f "$log"' EXIT
# The packages' own service start is refused in containers (policy-rc.d)
# and not wanted elsewhere; the tests run their own servers.
if ! { "${sudo[@]}" apt-get update -qq &&
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "migrate-deps.sh: apt-get failed" >&2
  exit 1
fi
if ! have_pg || ! have_maria; then
  echo "migrate-deps.sh: installed ${pkgs[*]}, but initdb/postgres or mariadb-install-db/mariadbd are still missing" >&2
  exit 1
fi
