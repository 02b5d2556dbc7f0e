#!/usr/bin/env bash
# tools/v2vm/run.sh CMD...      run CMD in a throw-away cgroup-v2-only Linux, print its output,
#                               exit with its status
# tools/v2vm/run.sh --prepare   install what the VM needs (once; downloads), choose the back end
#                               by booting it, print the choice
# tools/v2vm/run.sh --ready     exit 0 when the VM can boot without downloading anything
# tools/v2vm/run.sh --backend   print the back end a run would use (kvm, uml or tcg)
#
# Why: the sandbox has two cgroup back ends, and a development machine or CI runner usually
# offers only one (this project's are cgroup v1 hybrids). The VM gives every machine a
# cgroup-v2-only kernel to test the other one on, as root, without touching the host's cgroups.
#
# Three back ends boot the same guest, a stock Debian 6.1 kernel with `cgroup_no_v1=all`:
#   kvm  qemu-system-x86_64 with KVM (Debian's linux-image-amd64), when /dev/kvm is writable and
#        the CPU has vmx or svm: the fastest.
#   uml  user-mode Linux (Debian's user-mode-linux: the kernel runs as a host process, one CPU),
#        where it boots: user code at native speed, slow system calls and page faults. On some
#        hosts (Linux 6.18 guests of a hypervisor among them) it panics at init.
#   tcg  qemu-system-x86_64 emulating the CPU (TCG, one thread per vCPU): boots everywhere,
#        slow at everything (a boot is about 13 s, programs run several times slower).
# `--prepare` picks the first that boots on this host, in that order, by booting it once, and
# records the choice (with the host's kernel release) in the cache; a later run on another host
# kernel chooses again. `V2VM_BACKEND` forces one.
#
# The guest's root is the host's / (read-only: 9p for qemu, hostfs for uml) under a tmpfs
# overlay, so every host file and binary is at the same path and every write vanishes with the
# guest. cgroup2 is mounted at /sys/fs/cgroup with nsdelegate and memory_recursiveprot, every
# controller enabled from the root down, and CMD starts in $V2VM_CGROUP, where a root login of a
# systemd host would be. See tools/v2vm/init. CMD sees `V2VM_BACKEND` set to the back end that
# runs it (scale time limits by it: tcg is the slowest).
#
# Output: CMD's output on stdout while it runs; the kernel's console goes to a log, and a guest
# that does not finish is reported in one line (the kernel's own reason, e.g. its panic
# message), with the log kept at $V2VM_CACHE/last-console.log.
#
# Environment:
#   V2VM_BACKEND  kvm, uml or tcg (default: the one --prepare chose)
#   V2VM_CACHE    kernels, initramfs, job folders (default ~/.cache/ioi-run-v2vm)
#   V2VM_MEM      guest memory (default 4G)
#   V2VM_CPUS     qemu's vCPUs (default: the host's CPUs, at most 2; uml has one)
#   V2VM_CGROUP   cgroup CMD starts in (default /user.slice/user-0.slice/session-1.scope;
#                 "/" for the root cgroup)
#   V2VM_SHARE    a host folder (absolute path) mounted read-write at the same path in the
#                 guest, for CMD's results (default: none)
#   V2VM_APPEND   more of the kernel's command line (for tests of this script)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${V2VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ioi-run-v2vm}
choice=$cache/backend

say() { echo "[v2vm] $*" >&2; }
die() { say "$*"; exit 2; }

kvm_usable() { [[ -w /dev/kvm ]] && grep -qwE 'vmx|svm' /proc/cpuinfo; }
kernel_of() { if [[ $1 == uml ]]; then echo "$cache/uml/linux.uml"; else echo "$cache/qemu/vmlinuz"; fi; }
initrd_of() { if [[ $1 == uml ]]; then echo "$cache/uml/initrd.cpio.gz"; else echo "$cache/qemu/initrd.cpio.gz"; fi; }

# The back end a run uses: V2VM_BACKEND, else the one --prepare chose for this host kernel.
backend() {
    if [[ -n ${V2VM_BACKEND:-} ]]; then
        [[ $V2VM_BACKEND =~ ^(kvm|uml|tcg)$ ]] || die "V2VM_BACKEND must be kvm, uml or tcg: $V2VM_BACKEND"
        echo "$V2VM_BACKEND"
        return
    fi
    local recorded host
    host=$(uname -r)
    [[ -f $choice ]] && read -r recorded rest <"$choice" && [[ ${rest:-} == "$host" ]] && {
        echo "$recorded"
        return
    }
    return 1
}

ready() {
    local b
    b=$(backend) || return 1
    [[ -x /bin/busybox && -f $(kernel_of "$b") ]] || return 1
    [[ $b == uml ]] || command -v qemu-system-x86_64 >/dev/null
}

apt_install() {
    local missing=() p
    for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
    ((${#missing[@]})) || return 0
    say "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# Unpacks Debian package $1 (a metapackage is followed to the image it depends on) into $2.
apt_unpack() {
    local pkg=$1 dest=$2 real
    real=$(apt-cache depends "$pkg" 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}')
    mkdir -p "$dest/deb"
    # apt's own user cannot reach a root-only folder; the download works all the same.
    download() { (cd "$dest/deb" && apt-get download -q "${real:-$pkg}" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2); }
    download || { apt-get update -qq && download; }
    dpkg-deb -x "$dest"/deb/*.deb "$dest/root"
    rm -rf "$dest/deb"
}

fetch_uml() {
    [[ -x $cache/uml/linux.uml && -f $cache/uml/modules/order ]] && return
    say "fetching user-mode-linux"
    local unpack
    unpack=$(mktemp -d "$cache/unpack.XXXXXX")
    apt_unpack user-mode-linux "$unpack"
    rm -rf "$cache/uml" && mkdir -p "$cache/uml/modules"
    find "$unpack/root" -name 'overlay.ko*' -exec cp {} "$cache/uml/modules/overlay.ko" \;
    [[ -f $cache/uml/modules/overlay.ko ]] || die "user-mode-linux ships no overlay.ko"
    echo overlay >"$cache/uml/modules/order"
    mv "$unpack/root/usr/bin/linux.uml" "$cache/uml/linux.uml"
    rm -rf "$unpack"
}

# Debian's generic kernel, with the modules the guest needs to reach its root (virtio, 9p,
# overlay), decompressed and listed in load order; those built into the kernel are absent.
fetch_qemu() {
    apt_install qemu-system-x86
    [[ -f $cache/qemu/vmlinuz && -f $cache/qemu/modules/order ]] && return
    say "fetching linux-image-amd64"
    local unpack mods m f
    unpack=$(mktemp -d "$cache/unpack.XXXXXX")
    apt_unpack linux-image-amd64 "$unpack"
    rm -rf "$cache/qemu" && mkdir -p "$cache/qemu/modules"
    mods=$(echo "$unpack"/root/lib/modules/*)
    for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci \
        netfs fscache 9pnet 9pnet_virtio 9p overlay; do
        f=$(find "$mods" -name "$m.ko*" | head -1)
        [[ -n $f ]] || continue
        case $f in
        *.xz) xz -dc "$f" >"$cache/qemu/modules/$m.ko" ;;
        *.zst) zstd -qdc "$f" >"$cache/qemu/modules/$m.ko" ;;
        *) cp "$f" "$cache/qemu/modules/$m.ko" ;;
        esac
        echo "$m" >>"$cache/qemu/modules/order"
    done
    mv "$unpack"/root/boot/vmlinuz-* "$cache/qemu/vmlinuz"
    rm -rf "$unpack"
}

# The initramfs of a back end: busybox, tools/v2vm/init and the kernel's modules; rebuilt
# whenever the init or the kernel changes.
build_initrd() {
    local b=$1 initrd kernel tree applet
    initrd=$(initrd_of "$b") kernel=$(kernel_of "$b")
    [[ -f $initrd && $initrd -nt $here/init && $initrd -nt $kernel ]] && return
    tree=$(mktemp -d "$cache/initrd.XXXXXX")
    mkdir -p "$tree"/{bin,dev,proc,sys,lower,rw,newroot}
    cp /bin/busybox "$tree/bin/busybox"
    for applet in sh mount umount mkdir insmod cat echo sed tr cp stty poweroff switch_root; do
        ln -s busybox "$tree/bin/$applet"
    done
    cp -r "$(dirname "$kernel")/modules" "$tree/modules"
    install -m 755 "$here/init" "$tree/init"
    (cd "$tree" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$initrd.part"
    mv "$initrd.part" "$initrd"
    rm -rf "$tree"
}

record() { echo "$1 $(uname -r)" >"$choice"; }

prepare() {
    [[ $(id -u) == 0 ]] || die "run as root (apt-get)"
    mkdir -p "$cache"
    [[ -x /bin/busybox ]] || apt_install busybox-static
    local candidates b
    if [[ -n ${V2VM_BACKEND:-} ]]; then
        candidates=$(backend)
    elif kvm_usable; then
        candidates="kvm uml tcg"
    else
        candidates="uml tcg"
    fi
    for b in $candidates; do
        if [[ $b == uml ]]; then fetch_uml; else fetch_qemu; fi
        build_initrd "$b"
        if (export V2VM_BACKEND=$b && boot true && exit "$result"); then
            [[ -n ${V2VM_BACKEND:-} ]] || record "$b"
            say "back end for this host: $b"
            return 0
        fi
        say "the $b back end does not boot here; trying the next"
    done
    die "no back end boots here (tried: $candidates)"
}

# boot CMD...: one guest run of CMD with the back end of backend(); sets `result` to CMD's exit
# status, or to 125 when the guest did not finish. Returns 1 when the kernel stopped before the
# guest's init had set up the root (the back end does not boot here), else 0.
vm='' tailer='' job=''
cleanup() {
    [[ -z $vm ]] || kill -KILL -- "-$vm" "$vm" 2>/dev/null || true
    [[ -z $tailer ]] || kill "$tailer" 2>/dev/null || true
    [[ -z $job ]] || rm -rf "$job"
    vm='' tailer='' job=''
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

boot() {
    local b kernel initrd cgroup share cpus status=0 started append
    b=$(backend) || die "no back end chosen for this host kernel (run $0 --prepare)"
    kernel=$(kernel_of "$b") initrd=$(initrd_of "$b")
    [[ -f $kernel ]] || die "the $b kernel is not installed (run $0 --prepare)"
    build_initrd "$b"

    # The job folder is the guest's only way back: it holds the command (run.sh, started in the
    # current directory with the current PATH) and receives its output (out.log) and exit
    # status (rc); the kernel's console goes to console.log.
    mkdir -p "$cache/jobs"
    job=$(mktemp -d "$cache/jobs/job.XXXXXX")
    {
        printf 'export PATH=%q HOME=/root LANG=C.UTF-8 TERM=dumb V2VM_BACKEND=%q\n' "$PATH" "$b"
        printf 'cd %q || exit 97\n' "$PWD"
        printf '%q ' "$@"
        printf '\necho $? > %q/rc\n' "$job"
    } >"$job/run.sh"
    : >"$job/out.log"

    cgroup=${V2VM_CGROUP:-/user.slice/user-0.slice/session-1.scope}
    share=${V2VM_SHARE:-}
    [[ -z $share || $share == /* ]] || die "V2VM_SHARE must be an absolute path: $share"
    [[ $job$cgroup$share != *[[:space:]]* ]] || die "the job, cgroup and share paths may not hold spaces"
    append="quiet loglevel=3 panic=-1 cgroup_no_v1=all systemd.unified_cgroup_hierarchy=1"
    append+=" v2vm.backend=$b v2vm.job=$job v2vm.cgroup=$cgroup${share:+ v2vm.share=$share}"
    append+="${V2VM_APPEND:+ $V2VM_APPEND}"

    started=$(date +%s%N)
    # CMD's output, shown as it comes.
    tail -n +1 -F "$job/out.log" 2>/dev/null &
    tailer=$!
    if [[ $b == uml ]]; then
        say "booting user-mode Linux (${V2VM_MEM:-4G}, 1 CPU, cgroup v2 only) for: $*"
        # The kernel backs the guest's memory with an unlinked file in uml_dir's file system.
        mkdir -p "$job/uml"
        "$kernel" mem="${V2VM_MEM:-4G}" initrd="$initrd" uml_dir="$job/uml" con0=fd:0,fd:1 \
            con=null $append </dev/null >"$job/console.log" 2>&1 &
    else
        cpus=${V2VM_CPUS:-$(($(nproc) < 2 ? $(nproc) : 2))}
        local accel=(-accel kvm -cpu host)
        [[ $b == kvm ]] || accel=(-accel tcg,thread=multi -cpu max)
        say "booting qemu ($b, $cpus vCPUs, ${V2VM_MEM:-4G}, cgroup v2 only) for: $*"
        local shared=()
        [[ -z $share ]] || shared=(-virtfs "local,path=$share,mount_tag=share,security_model=none,multidevs=remap")
        qemu-system-x86_64 "${accel[@]}" -M q35 -m "${V2VM_MEM:-4G}" -smp "$cpus" -nodefaults \
            -no-user-config -display none -serial stdio -monitor none -no-reboot \
            -kernel "$kernel" -initrd "$initrd" -append "console=ttyS0 $append" \
            -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
            -virtfs "local,path=$job,mount_tag=job,security_model=none,multidevs=remap" \
            "${shared[@]}" </dev/null >"$job/console.log" 2>&1 &
    fi
    # uml makes itself the leader of a process group of its own (its helper processes): cleanup
    # kills the group.
    vm=$!
    # (bash reports a guest killed by a signal on its own line: reason() says it once)
    wait "$vm" 2>/dev/null || status=$?
    vm=''
    sleep 0.2
    say "the $b guest ran $((($(date +%s%N) - started) / 1000000)) ms (boot and power-off included)"
    cp "$job/console.log" "$cache/last-console.log" 2>/dev/null || true
    local booted=0
    grep -q '\[v2vm\] guest: kernel' "$job/console.log" || booted=1
    if [[ -f $job/rc ]]; then
        result=$(cat "$job/rc")
    else
        say "the $b guest did not finish: $(reason "$job/console.log" "$status") (console: $cache/last-console.log)"
        result=125
    fi
    cleanup
    return $booted
}

# The one line that says why a guest stopped early: the kernel's panic, the init's own failure,
# or the hypervisor's exit status.
reason() {
    local line
    line=$(grep -m1 -oE 'Kernel panic - not syncing: .*|\[v2vm\] guest: .*|qemu-system-x86_64: .*' "$1" || true)
    # Else the console's last words.
    [[ -n $line ]] || line=$(grep -v '^[[:space:]]*$' "$1" | tail -n 1 || true)
    line=$(printf '%s' "$line" | tr -d '\r' | cut -c 1-200)
    echo "${line:-the kernel printed nothing} (exit status $2)"
}

# One block, parsed whole before it runs: the script may be edited while a guest runs.
{
    case ${1:-} in
    "") echo "usage: $0 CMD... | --prepare | --ready | --backend" >&2; exit 2 ;;
    --ready) ready; exit ;;
    --prepare) prepare; exit ;;
    --backend) backend || die "no back end chosen for this host kernel (run $0 --prepare)"; exit ;;
    esac

    [[ $(id -u) == 0 ]] || die "run as root (the guest shares the host's /)"
    ready || prepare
    if ! boot "$@" && [[ $(backend) == uml && -z ${V2VM_BACKEND:-}${V2VM_APPEND:-} ]]; then
        # A user-mode Linux that booted once can still die at boot on some hosts: this host then
        # uses qemu from now on.
        say "user-mode Linux does not boot reliably on this host; switching it to tcg"
        fetch_qemu
        record tcg
        boot "$@" || true
    fi
    exit "$result"
}
