# ticketd in an image FROM scratch: nothing is pulled, the static binary is
# built on the host first (scripts/docker-build.sh does both steps):
#
#   CGO_ENABLED=0 go build -trimpath -ldflags "$(scripts/version-ldflags.sh)" -o build/docker/ticketd ./cmd/ticketd
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t ticketd:dev .
#
# The release is stamped into the binary at that build (ticketd version
# prints it; .git is not in the image's context). VERSION only labels the
# image with it.
#
# Runs as an unprivileged user; Raft state lives in the /data volume.
FROM scratch
ARG VERSION=unknown
LABEL org.opencontainers.image.version=$VERSION
COPY --chown=65532:65532 build/docker/rootfs/ /
COPY build/docker/ticketd /ticketd
USER 65532:65532
VOLUME /data
EXPOSE 8080 8090 6379
ENTRYPOINT ["/ticketd"]
CMD ["serve", "--data-dir", "/data", "--http-addr", "0.0.0.0:8080", "--raft-addr", "0.0.0.0:8090"]
