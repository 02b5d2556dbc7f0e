#!/bin/sh
# Container entrypoint for ioi-run.
#
# An ioi-run subcommand (or option) runs ioi-run: `docker run IMAGE serve --host 0.0.0.0` runs
# `ioi-run serve --host 0.0.0.0`; anything else is a program: `docker run IMAGE bash`.
#
# In a private cgroup namespace (Docker on a cgroup v2 host) the root of the namespace holds the
# container's processes, and the kernel refuses to enable controllers for the children of a
# cgroup that holds processes (EBUSY). So, as container entrypoints that nest cgroups do, every
# process of that root moves into a leaf `init` first; then ioi-run can create its run cgroups
# beside it. Nothing happens on cgroup v1, on the host's real root cgroup (which has no
# cgroup.type and may hold processes), or when /sys/fs/cgroup is read-only or not ours (a
# container started with --user): ioi-run then says what to do.
#
# Nothing here needs root: every step that may be refused to a user is skipped, never fatal.
set -u
cg=/sys/fs/cgroup

# Docker and podman mount the container's own cgroup read-only unless --privileged. With
# CAP_SYS_ADMIN (`--cap-add SYS_ADMIN`) the container may make that mount writable, which gives
# it its own cgroup and nothing above: the sandbox creates its run cgroups there.
for mount in $(awk '($9 == "cgroup" || $9 == "cgroup2") && $6 ~ /^ro/ { print $5 }' \
        /proc/self/mountinfo 2>/dev/null); do
    mount -o remount,bind,rw "$mount" 2>/dev/null || true
done

if [ -f "$cg/cgroup.controllers" ] && [ -f "$cg/cgroup.type" ] && [ -w "$cg/cgroup.procs" ] \
    && [ -n "$(cat "$cg/cgroup.procs" 2>/dev/null)" ] && mkdir -p "$cg/init" 2>/dev/null; then
    # Processes may exit while they are moved: a failed move of one is not an error.
    for pid in $(cat "$cg/cgroup.procs"); do
        echo "$pid" > "$cg/init/cgroup.procs" 2>/dev/null || true
    done
fi

# The compile cache is a volume; one the current user cannot write would make every start
# recompile (precompiled headers are ~100 MB each): say so once, ioi-run still runs.
cache=${IOI_RUN_CACHE:-}
if [ -n "$cache" ] && ! { mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ]; }; then
    echo "ioi-run-entrypoint: the compile cache $cache is not writable by uid $(id -u):" \
        "mount a volume this user owns (or run as root) to keep compiled programs" >&2
fi

if [ $# -eq 0 ]; then
    set -- doctor
fi
case "$1" in
    -*|sandbox|keeper|doctor|judge|evaluate|merge|report|fidelity|convert|bench|slurm|serve|help)
        set -- ioi-run "$@" ;;
esac
exec "$@"
