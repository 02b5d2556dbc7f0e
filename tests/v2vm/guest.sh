#!/bin/bash
# Runs inside the cgroup-v2-only guest of tools/v2vm/run.sh (as root, in a session-like scope),
# driven by tests/it/cgroup_v2.rs: sets up one host situation and runs doctor, a subset of the
# sandbox's hostile tests and judge fixtures (every verdict kind) in it.
#
#   guest.sh SCENARIO IOI_RUN HOSTILE_TEST_BINARY PROJECT_DIR OUT_DIR
#
# SCENARIO: session   root from a session scope (also: a chroot, and the sampled peak memory)
#           container root in a private cgroup namespace whose root holds other processes
#           user      a normal user (nobody) in a delegated scope
#           few       (internal) the checks of the container scenario, inside the container
# Writes OUT_DIR/<name>.out (stdout+stderr) and OUT_DIR/<name>.rc for every step; the Rust
# test reads and judges them. The guest is slow on system calls and page faults: the hostile
# tests run with IOI_TEST_TIME_SCALE=5 and the judge fixture with a 20 s time limit and
# 64 MiB of memory (so that its memory hog reaches the limit quickly). The guest charges its
# programs the time it is not scheduled on the host, so on a loaded host a correct solution
# takes several times its own CPU time.
set -u
scenario=$1 ioi=$2 hostile=$3 project=$4 out=$5
export IOI_TEST_TIME_SCALE=5 TMPDIR=/tmp
CG=/sys/fs/cgroup
HOSTILE_ALL="fork_bomb_is_contained_by_the_pids_limit memory_bomb_touching_pages_is_memory_limit
 threads_burning_cpu_hit_the_time_limit cpu_time_counts_every_thread network_sockets_are_killed
 ptrace_is_killed host_files_outside_the_box_are_invisible writing_outside_the_box_fails
 kill_minus_one_reaches_nothing_outside double_forked_daemon_does_not_survive
 plain_program_runs_and_reports_usage clone3_answers_enosys_and_x32_calls_are_killed
 a_placed_box_stays_on_its_cpu"
HOSTILE_FEW="memory_bomb_touching_pages_is_memory_limit plain_program_runs_and_reports_usage
 fork_bomb_is_contained_by_the_pids_limit threads_burning_cpu_hit_the_time_limit
 the_program_cannot_reach_its_init a_placed_box_stays_on_its_cpu"
SOLUTIONS_ALL="ac.cpp ordered_pa.cpp int_overflow.cpp burn_tle.cpp mle.cpp segv.cpp ce.cpp"
SOLUTIONS_FEW="ac.cpp mle.cpp burn_tle.cpp"

# step NAME CMD...: runs CMD, output to OUT/NAME.out, exit status to OUT/NAME.rc.
step() {
    local name=$1; shift
    echo "[guest] $scenario: $name" >&2
    "$@" > "$out/$name.out" 2>&1 < /dev/null
    echo $? > "$out/$name.rc"
}

# The judge fixture, with a time limit scaled for the slow guest.
fixture=/tmp/sumpairs
rm -rf $fixture && cp -r "$project/tests/problems/sumpairs" $fixture
sed -i -e 's/"time_limit": *[0-9.]*/"time_limit": 20.0/' \
    -e 's/"memory_limit": *[0-9]*/"memory_limit": 67108864/' $fixture/problem.json
chmod -R a+rX $fixture

# checks IOI_RUN HOSTILE_TESTS SOLUTIONS PREFIX...: doctor, hostile tests, judge fixtures, each
# run through PREFIX (e.g. setpriv ... to become another user).
checks() {
    local tests=$1 solutions=$2; shift 2
    step doctor "$@" "$ioi" doctor
    # shellcheck disable=SC2086
    step hostile "$@" "$hostile" --test-threads=1 --exact $tests
    for sol in $solutions; do
        step "judge-$sol" "$@" env IOI_RUN_CACHE=/tmp/cache-$(id -u) "$ioi" judge --json -j 1 \
            $fixture $fixture/solutions/$sol
    done
}

case $scenario in
session)
    checks "$HOSTILE_ALL" "$SOLUTIONS_ALL"
    # Kernels before 5.19 have no memory.peak: the sampled peak must still see the memory.
    step sampled env IOI_SANDBOX_SAMPLE_MEMORY=1 "$hostile" --test-threads=1 --exact \
        memory_bomb_touching_pages_is_memory_limit plain_program_runs_and_reports_usage
    step sampled-judge-mle.cpp env IOI_SANDBOX_SAMPLE_MEMORY=1 IOI_RUN_CACHE=/tmp/cache-0 \
        "$ioi" judge --json -j 1 $fixture $fixture/solutions/mle.cpp
    # A chroot (into a tmpfs with the system bound in): the kernel refuses user namespaces.
    root=/run/chroot && mkdir -p $root && mount -t tmpfs tmpfs $root
    for d in bin sbin lib lib64; do [ -L /$d ] && ln -s "$(readlink /$d)" $root/$d; done
    for d in /usr /etc /proc /sys /dev /tmp "$(dirname "$project")" "$(dirname "$ioi")"; do
        [ -d $root$d ] && mountpoint -q $root$d && continue
        mkdir -p $root$d && mount --rbind $d $root$d
    done
    step chroot-doctor chroot $root "$ioi" doctor
    ;;
container)
    # Like Docker: the container's processes in one cgroup, which becomes the root of a private
    # cgroup namespace with cgroup2 mounted afresh at /sys/fs/cgroup.
    mkdir $CG/ctr $CG/ctr-alone
    inside="umount /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup &&"
    # 1. ioi-run beside another process of the container: the real cause and the fix.
    (
        echo $BASHPID > $CG/ctr/cgroup.procs
        sleep 600 & sleeper=$!
        step busy-doctor unshare -Cm sh -c "$inside exec $ioi doctor"
        kill $sleeper
    )
    # 2. ioi-run alone in the container (exec): it moves itself into a leaf.
    step alone-doctor sh -c "echo \$\$ > $CG/ctr-alone/cgroup.procs && exec unshare -Cm sh -c '$inside exec $ioi doctor'"
    # 3. With the Dockerfile's entrypoint, beside other processes: everything works.
    (
        echo $BASHPID > $CG/ctr/cgroup.procs
        sleep 600 & sleeper=$!
        unshare -Cm sh -c "$inside exec $project/docker/entrypoint.sh bash $0 few $ioi $hostile $project $out"
        kill $sleeper
    )
    ;;
user)
    # Delegated scopes as systemd gives them (systemd-run --user --scope -p Delegate=yes): a
    # fresh one for each command, owned by the user.
    uid=65534
    slice=$CG/user.slice/user-$uid.slice/user@$uid.service/app.slice
    mkdir -p "$slice"
    path=$CG
    for part in user.slice user-$uid.slice user@$uid.service app.slice; do
        path=$path/$part
        for c in memory pids cpu; do echo "+$c" > "$path/cgroup.subtree_control"; done
    done
    n=0
    new_scope() {
        n=$((n + 1)); scope=$slice/run-$n.scope
        mkdir "$scope"
        chown $uid "$scope" "$scope"/cgroup.procs "$scope"/cgroup.threads "$scope"/cgroup.subtree_control
    }
    as_user="setpriv --reuid=$uid --regid=$uid --clear-groups env HOME=/tmp"
    # 1. The user's shell stays in the scope: the real cause (EBUSY) and the fix.
    new_scope
    step busy-doctor sh -c "echo \$\$ > $scope/cgroup.procs && exec $as_user sh -c '$ioi doctor; exit \$?'"
    # 2. ioi-run alone in its scope: doctor, the hostile tests and the fixtures work.
    # alone CMD...: CMD as the user, alone in a new scope.
    alone() {
        new_scope
        sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$scope" $as_user "$@"
    }
    step doctor alone "$ioi" doctor
    first_scope=$scope
    # shellcheck disable=SC2086
    step hostile alone "$hostile" --test-threads=1 --exact $HOSTILE_FEW
    for sol in $SOLUTIONS_FEW; do
        step "judge-$sol" alone env IOI_RUN_CACHE=/tmp/cache-$uid "$ioi" judge --json -j 1 \
            $fixture $fixture/solutions/$sol
    done
    # What doctor left in its scope (no nested leaf may be there).
    (cd "$first_scope" && find . -mindepth 1 -type d) > "$out/leftover.out"
    ;;
few)
    # Inside the container (started by the container scenario through the entrypoint).
    checks "$HOSTILE_FEW" "$SOLUTIONS_FEW"
    ;;
*) echo "unknown scenario $scenario" >&2; exit 2 ;;
esac
# The last thing the guest does: the host then knows every step ran, even if the VM itself
# fails on its way out.
echo done > "$out/finished-$scenario"
exit 0
