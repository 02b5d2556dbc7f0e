#!/usr/bin/env bash
# CI: prepares the cgroup-v2 VM of tests/cgroup_v2.rs (user-mode-linux or qemu, busybox, the
# Debian kernel), so that the test itself downloads nothing. The VM script lives beside the
# project in shared/tools/ (V2VM_SCRIPT overrides). Booting it once installs everything.
set -euo pipefail
cd "$(dirname "$0")/.."
script=${V2VM_SCRIPT:-}
if [ -z "$script" ]; then
  for dir in .. ../.. ../../..; do
    if [ -f "$dir/shared/tools/run-in-v2-vm.sh" ]; then script=$dir/shared/tools/run-in-v2-vm.sh; break; fi
  done
fi
if [ -z "$script" ]; then
  echo ".ci/v2vm.sh: shared/tools/run-in-v2-vm.sh not found beside the project" >&2
  exit 1
fi
command -v setpriv >/dev/null && command -v unshare >/dev/null || {
  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y util-linux
}
"$script" true
