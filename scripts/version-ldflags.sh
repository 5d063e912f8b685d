#!/usr/bin/env bash
# Prints the -ldflags value that stamps ticketd's release into the binary
# (internal/buildinfo.version), from `git describe` of this checkout: the
# nearest tag and the commits since it, or the commit's hash alone on a clone
# without tags, "-dirty" for uncommitted changes. Outside a git checkout it
# prints nothing, and the binary says what Go recorded ("devel").
#   go build -ldflags "$(scripts/version-ldflags.sh)" ./cmd/ticketd
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if v=$(git -C "$root" describe --tags --always --dirty 2>/dev/null) && [[ -n $v ]]; then
	printf -- '-X github.com/ticketd/ticketd/internal/buildinfo.version=%s\n' "$v"
fi
