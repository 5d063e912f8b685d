#!/usr/bin/env bash
# Stops the Docker cluster and deletes its network and volumes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
case ${NODES:-3} in 3) file=$root/deploy/docker-compose.yml ;; *) file=$root/deploy/docker-compose.5.yml ;; esac
docker-compose -p ticketd -f "$file" down -v --remove-orphans
