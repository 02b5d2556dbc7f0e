#!/bin/sh
# Builds isolate, the IOI's sandbox, from its public source: the side-by-side baseline of
# `ioi-run bench sandbox --isolate PATH` and the floor with a sandbox per process of
# `ioi-run bench judge --task DIR --isolate PATH`. Nothing in ioi-run or its tests needs it.
#
#   tools/build-isolate.sh [--source DIR] [OUT_DIR]
#
# OUT_DIR (default: ./isolate-build) receives `isolate` and its configuration `isolate.cf`
# (compiled in as the file it reads): boxes under /var/local/lib/isolate, locks under
# /run/isolate/locks, uids and gids 50000..50999 (clear of ioi-run's 60000..60999), no cgroup
# root (the baseline runs without --cg). Without --source, the tagged release is cloned from
# GitHub. Build dependencies (Debian): gcc, make, pkg-config, libcap-dev, libseccomp-dev; as
# root they are installed when missing. The manual pages (asciidoc) are not built.
set -eu

TAG=v2.6
REPO=https://github.com/ioi/isolate
source_dir=
while [ $# -gt 0 ]; do
    case "$1" in
        --source) source_dir=$2; shift 2 ;;
        -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
        -*) echo "build-isolate: unknown option $1" >&2; exit 2 ;;
        *) break ;;
    esac
done
out=$(realpath -m "${1:-isolate-build}")

missing=
for pkg in gcc make pkg-config libcap-dev libseccomp-dev; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get install -y $missing
    else
        echo "build-isolate: install first (as root): apt-get install$missing" >&2
        exit 1
    fi
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -z "$source_dir" ]; then
    git clone --quiet --depth 1 --branch "$TAG" "$REPO" "$work/isolate"
else
    cp -r "$source_dir" "$work/isolate"
fi

mkdir -p "$out"
make -C "$work/isolate" --quiet isolate CONFIG="$out/isolate.cf" BUILD_FROM_GIT= \
    SYSTEMD_CFLAGS= SYSTEMD_LIBS=
cp "$work/isolate/isolate" "$out/isolate"
cat > "$out/isolate.cf" <<CF
# isolate's configuration for ioi-run's side-by-side benchmark (tools/build-isolate.sh).
box_root = /var/local/lib/isolate
lock_root = /run/isolate/locks
cg_root = /sys/fs/cgroup/isolate-unused
first_uid = 50000
first_gid = 50000
num_boxes = 1000
CF
echo "$out/isolate (configuration $out/isolate.cf)"
echo "as root: mkdir -p /var/local/lib/isolate; ioi-run bench sandbox --isolate $out/isolate"
