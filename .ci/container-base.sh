#!/usr/bin/env bash
# The container engine of tests/it/container.rs: podman with runc (Debian's default runtime, crun,
# refuses cgroup v1 hosts), and once per machine a local Debian base image with the runtime
# stage's packages, so that building the image downloads nothing (no image registry is needed).
set -euo pipefail

BASE=localhost/ioi-run-base:bookworm
missing=()
# podman-compose runs compose.yaml in the same test.
for tool in podman buildah runc mmdebstrap podman-compose; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if ((${#missing[@]})); then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" uidmap
fi
if ! podman image exists "$BASE"; then
  tar=$(mktemp --suffix=.tar)
  trap 'rm -f "$tar"' EXIT
  # The packages the Dockerfile's runtime stage installs when its base lacks them.
  mmdebstrap --variant=minbase --include=g++,gcc,python3,ca-certificates bookworm "$tar"
  podman import "$tar" "$BASE"
fi
