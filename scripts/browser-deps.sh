#!/usr/bin/env bash
# Installs what the status page's browser test (ui/browser_test.go) needs: a
# headless Chromium. Debian's "chromium" package is installed when no
# chromium is on PATH (this needs root, or sudo); the path found is printed,
# so a caller may export it:
#
#   export TICKETD_CHROMIUM=$(scripts/browser-deps.sh)
#
# With TICKETD_CHROMIUM set the browser test must run (it fails if it cannot
# start the browser); without it, it looks for chromium or chromium-browser on
# PATH and skips, naming this script, when there is none.
set -euo pipefail

find_chromium() {
  local c
  for c in chromium chromium-browser; do
    if command -v "$c" >/dev/null 2>&1; then
      command -v "$c"
      return 0
    fi
  done
  return 1
}

if path=$(find_chromium); then
  echo "$path"
  exit 0
fi

sudo=()
if [[ $(id -u) != 0 ]]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "browser-deps.sh: chromium is missing and installing it needs root (no sudo here)" >&2
    exit 1
  fi
  sudo=(sudo)
fi
echo "browser-deps.sh: installing Debian's chromium" >&2
# apt's own progress goes to stderr, so that stdout is the path alone.
"${sudo[@]}" apt-get update >&2
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >&2

if ! path=$(find_chromium); then
  echo "browser-deps.sh: chromium was installed but is not on PATH" >&2
  exit 1
fi
echo "$path"
