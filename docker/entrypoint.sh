#!/bin/sh
# Container entrypoint for ioi-run. In a private cgroup namespace (Docker on a cgroup v2 host)
# the root of the namespace holds the container's processes, and the kernel refuses to enable
# controllers for the children of a cgroup that holds processes (EBUSY). So, as container
# entrypoints that nest cgroups do, every process of that root moves into a leaf `init` first;
# then ioi-run can create its run cgroups beside it. Nothing happens on cgroup v1, on the
# host's real root cgroup (which has no cgroup.type and may hold processes), or when
# /sys/fs/cgroup is read-only (ioi-run then says what to do).
set -eu
cg=/sys/fs/cgroup
if [ -f "$cg/cgroup.controllers" ] && [ -f "$cg/cgroup.type" ] && [ -w "$cg/cgroup.procs" ] \
    && [ -n "$(cat "$cg/cgroup.procs")" ]; then
    mkdir -p "$cg/init"
    # Processes may exit while they are moved: a failed move of one is not an error.
    for pid in $(cat "$cg/cgroup.procs"); do
        echo "$pid" > "$cg/init/cgroup.procs" 2>/dev/null || true
    done
fi
exec "$@"
