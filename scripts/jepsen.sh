#!/usr/bin/env bash
# Runs the fault-injection suite with the given flags (see jepsen/README.md),
# after waiting for the machine to be idle. Examples:
#   scripts/jepsen.sh --nodes 5 --time-limit 5m
#   scripts/jepsen.sh --docker --nodes 5 --time-limit 30m      # the long run
#   scripts/jepsen.sh --check jepsen-results/20250101T120000    # re-check a history
#   scripts/jepsen.sh --upgrade [--rollback]   # from the release jepsen/upgrade-from names
# Exit status: 0 valid, 1 invalid, 2 inconclusive (see jepsen/README.md).
set -euo pipefail
# shellcheck source=scripts/jepsen-lib.sh
source "$(dirname "$0")/jepsen-lib.sh"
jepsen_build
jepsen_wait_idle
cd "$jepsen_root"
exec build/jepsen/jepsen "$@"
