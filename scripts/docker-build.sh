#!/usr/bin/env bash
# Builds the static ticketd binary and the ticketd image FROM scratch.
#   IMAGE=ticketd:dev scripts/docker-build.sh
#   TAGS=ticketd_faults IMAGE=ticketd:faults scripts/docker-build.sh   # fault-suite build
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
image=${IMAGE:-ticketd:dev}
cd "$root"
rm -rf build/docker/rootfs build/docker/ticketd
# /tls and /ca: empty named volumes mounted there take the owner (the
# image's unprivileged user) from the image.
mkdir -p build/docker/rootfs/data build/docker/rootfs/tmp build/docker/rootfs/tls build/docker/rootfs/ca
ldflags=$(scripts/version-ldflags.sh)
CGO_ENABLED=0 go build -trimpath ${TAGS:+-tags "$TAGS"} \
  -ldflags "-s -w $ldflags" \
  -o build/docker/ticketd ./cmd/ticketd
# The image's label says the release the binary reports (ticketd version).
docker build -q --build-arg "VERSION=${ldflags##*=}" -t "$image" . >/dev/null
echo "built $image ($(docker image inspect -f '{{.Size}}' "$image") bytes)"
