#!/usr/bin/env bash
# tools/v2vm/run.sh CMD...      run CMD in a throw-away cgroup-v2-only Linux, print its output,
#                               exit with its status
# tools/v2vm/run.sh --prepare   install what the VM needs (once; downloads), boot nothing
# tools/v2vm/run.sh --ready     exit 0 when the VM can boot without downloading anything
#
# Why: the sandbox has two cgroup back ends, and a development machine or CI runner usually
# offers only one (this project's are cgroup v1 hybrids). The VM gives every machine a
# cgroup-v2-only kernel to test the other one on, as root, without touching the host's cgroups.
#
# The guest is user-mode Linux (Debian's `user-mode-linux` package: a 6.1 kernel that runs as a
# host process, one CPU, no /dev/kvm needed) booted with `cgroup_no_v1=all`. Its root is the
# host's / (hostfs, read-only) under a tmpfs overlay, so every host file and binary is at the
# same path and every write vanishes with the guest. cgroup2 is mounted at /sys/fs/cgroup with
# nsdelegate and memory_recursiveprot, every controller enabled from the root down, and CMD
# starts in $V2VM_CGROUP, where a root login of a systemd host would be. See tools/v2vm/init.
#
# Environment:
#   V2VM_CACHE    the kernel, the initramfs and the job folders (default ~/.cache/ioi-run-v2vm)
#   V2VM_MEM      guest memory (default 4G)
#   V2VM_CGROUP   cgroup CMD starts in (default /user.slice/user-0.slice/session-1.scope;
#                 "/" for the root cgroup)
#   V2VM_SHARE    a host folder (absolute path) mounted read-write at the same path in the
#                 guest, for CMD's results (default: none)
# The guest is slow on system calls, page faults and fork/exec: scale time limits by ~5-20.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${V2VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ioi-run-v2vm}
kernel=$cache/linux.uml
modules=$cache/modules
initrd=$cache/initrd.cpio.gz

say() { echo "[v2vm] $*" >&2; }
die() { say "$*"; exit 2; }

ready() {
    [[ -x $kernel && -f $modules/overlay.ko && -x /bin/busybox ]]
}

# The Debian packages: busybox-static is installed (the initramfs and the guest's PID 1 use it);
# user-mode-linux is only unpacked into the cache, since its kernel is run from there.
prepare() {
    [[ $(id -u) == 0 ]] || die "run as root (apt-get)"
    mkdir -p "$cache"
    if [[ ! -x /bin/busybox ]]; then
        say "installing busybox-static"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            busybox-static >&2
    fi
    if [[ ! -x $kernel || ! -f $modules/overlay.ko ]]; then
        say "fetching user-mode-linux"
        local unpack
        unpack=$(mktemp -d "$cache/unpack.XXXXXX")
        # apt's own user cannot reach a root-only folder; the download works all the same.
        download() { (cd "$unpack" && apt-get download -q user-mode-linux 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2); }
        download || { apt-get update -qq && download; }
        dpkg-deb -x "$unpack"/user-mode-linux_*.deb "$unpack/root"
        rm -rf "$modules" && mkdir -p "$modules"
        find "$unpack/root" -name 'overlay.ko*' -exec cp {} "$modules/" \;
        [[ -f $modules/overlay.ko ]] || die "user-mode-linux ships no overlay.ko"
        mv "$unpack/root/usr/bin/linux.uml" "$kernel.part" && mv "$kernel.part" "$kernel"
        rm -rf "$unpack"
    fi
}

# The initramfs: busybox and tools/v2vm/init; rebuilt whenever the init or the kernel changes.
build_initrd() {
    if [[ -f $initrd && $initrd -nt $here/init && $initrd -nt $kernel ]]; then
        return
    fi
    local tree
    tree=$(mktemp -d "$cache/initrd.XXXXXX")
    mkdir -p "$tree"/{bin,dev,proc,sys,lower,rw,newroot}
    cp /bin/busybox "$tree/bin/busybox"
    for applet in sh mount umount mkdir insmod cat echo sed tr cp stty poweroff switch_root; do
        ln -s busybox "$tree/bin/$applet"
    done
    cp -r "$modules" "$tree/modules"
    install -m 755 "$here/init" "$tree/init"
    (cd "$tree" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$initrd.part"
    mv "$initrd.part" "$initrd"
    rm -rf "$tree"
}

case ${1:-} in
"") echo "usage: $0 CMD... | --prepare | --ready" >&2; exit 2 ;;
--ready) ready; exit ;;
--prepare) prepare; build_initrd; exit ;;
esac

[[ $(id -u) == 0 ]] || die "run as root (the guest shares the host's /)"
ready || prepare
build_initrd

# The job folder is the guest's only way back: it holds the command (run.sh, started in the
# current directory with the current PATH) and receives its exit status (rc).
mkdir -p "$cache/jobs"
job=$(mktemp -d "$cache/jobs/job.XXXXXX")
trap 'rm -rf "$job"' EXIT
{
    printf 'export PATH=%q HOME=/root LANG=C.UTF-8 TERM=dumb\n' "$PATH"
    printf 'cd %q || exit 97\n' "$PWD"
    printf '%q ' "$@"
    printf '\necho $? > %q/rc\n' "$job"
} >"$job/run.sh"

cgroup=${V2VM_CGROUP:-/user.slice/user-0.slice/session-1.scope}
share=${V2VM_SHARE:-}
[[ -z $share || $share == /* ]] || die "V2VM_SHARE must be an absolute path: $share"
[[ $job$cgroup$share != *[[:space:]]* ]] || die "the job, cgroup and share paths may not hold spaces"

started=$(date +%s%N)
say "booting user-mode Linux (${V2VM_MEM:-4G}, cgroup v2 only) for: $*"
# The kernel backs the guest's memory with an unlinked file in uml_dir's file system.
mkdir -p "$job/uml"
status=0
"$kernel" mem="${V2VM_MEM:-4G}" initrd="$initrd" uml_dir="$job/uml" con0=fd:0,fd:1 con=null \
    quiet loglevel=3 panic=-1 cgroup_no_v1=all systemd.unified_cgroup_hierarchy=1 \
    v2vm.job="$job" v2vm.cgroup="$cgroup" ${share:+v2vm.share="$share"} </dev/null &
vm=$!
# The kernel makes itself the leader of a process group of its own (its helper processes):
# a caller that stops this script stops the whole guest with it.
trap 'kill -KILL -- -$vm $vm 2>/dev/null || true; rm -rf "$job"' EXIT
trap 'exit 143' TERM INT HUP
wait "$vm" || status=$?
say "the guest ran $(( ($(date +%s%N) - started) / 1000000 )) ms (boot and power-off included)"
if [[ ! -f $job/rc ]]; then
    say "the guest reported no exit status (the kernel exited with $status)"
    exit 125
fi
exit "$(cat "$job/rc")"
