#!/bin/sh
# A stand-in for isolate in the tests of `bench judge --task --isolate`: a box is a folder under
# $FAKE_ISOLATE_ROOT and a run is the plain command in it, with isolate's options that the
# floor gives (--stdin, --stdout, --stderr relative to the box, --dir=/fifo=HOST:rw mapping
# /fifo/ in paths and arguments to HOST); limits are ignored. Every call is logged. The boxes
# named in $FAKE_ISOLATE_FAIL_INIT fail to initialise.
set -eu
root=${FAKE_ISOLATE_ROOT:?}
id= stdin= stdout= stderr= fifo_host= action=
while [ $# -gt 0 ]; do
    case "$1" in
        --box-id=*) id=${1#--box-id=} ;;
        --init) action=init ;;
        --cleanup) action=cleanup ;;
        --run) action=run ;;
        --stdin=*) stdin=${1#--stdin=} ;;
        --stdout=*) stdout=${1#--stdout=} ;;
        --stderr=*) stderr=${1#--stderr=} ;;
        --dir=/fifo=*) fifo_host=${1#--dir=/fifo=}; fifo_host=${fifo_host%:rw} ;;
        --) shift; break ;;
        *) ;;
    esac
    shift
done
echo "$action $id" >> "$root/calls.log"
box=$root/$id
map() {
    case "$1" in
        /fifo/*) echo "$fifo_host/${1#/fifo/}" ;;
        *) echo "$1" ;;
    esac
}
case $action in
    init)
        # Boxes named in $FAKE_ISOLATE_FAIL_INIT cannot be made, as a full box root would.
        for failing in ${FAKE_ISOLATE_FAIL_INIT:-}; do
            if [ "$failing" = "$id" ]; then
                echo "box $id cannot be initialised" >&2
                exit 2
            fi
        done
        mkdir -p "$box/box"
        echo "$box"
        ;;
    cleanup) rm -rf "$box" ;;
    run)
        cd "$box/box"
        n=$#
        i=0
        while [ "$i" -lt "$n" ]; do
            arg=$1
            shift
            set -- "$@" "$(map "$arg")"
            i=$((i + 1))
        done
        if [ -n "$stdin" ]; then exec <"$(map "$stdin")"; fi
        if [ -n "$stdout" ]; then exec >"$(map "$stdout")"; fi
        if [ -n "$stderr" ]; then exec 2>"$(map "$stderr")"; fi
        exec "$@"
        ;;
esac
