#!/usr/bin/env bash
# CI: installs the cgroup-v2 VM of tests/it/cgroup_v2.rs (tools/v2vm/run.sh: busybox, Debian's
# kernels for qemu and user-mode Linux) and chooses its back end by booting each once, so that
# the test itself downloads nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v setpriv >/dev/null && command -v unshare >/dev/null || {
  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y util-linux
}
tools/v2vm/run.sh --prepare
echo "cgroup-v2 VM back end: $(tools/v2vm/run.sh --backend)"
