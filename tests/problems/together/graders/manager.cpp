// together manager: manager <u0_to_m> <m_to_u0> <u1_to_m> <m_to_u1>, stdin = input.txt (ignored).
// Score 1 when both user processes and the manager may run on one and the same CPU.
#include <sched.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>

static void finish(const char *score, const char *msg) {
    printf("%s\n", score);
    fprintf(stderr, "%s\n", msg);
    fflush(stdout);
    fflush(stderr);
    exit(0);
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    if (argc < 5) finish("0", "Judge failure: manager needs 4 FIFO paths");
    // Each user opens its input FIFO first.
    FILE *to0 = fopen(argv[2], "w"), *from0 = fopen(argv[1], "r");
    FILE *to1 = fopen(argv[4], "w"), *from1 = fopen(argv[3], "r");
    if (!to0 || !from0 || !to1 || !from1) finish("0", "Judge failure: cannot open FIFOs");
    cpu_set_t mine;
    if (sched_getaffinity(0, sizeof mine, &mine) != 0) finish("0", "Judge failure: no affinity");
    if (CPU_COUNT(&mine) != 1) finish("0", "Output isn't correct: the manager may run on several CPUs");
    int cpu = 0;
    while (!CPU_ISSET(cpu, &mine)) cpu++;
    FILE *from[2] = {from0, from1};
    for (FILE *f : from) {
        int k, c;
        if (fscanf(f, "%d", &k) != 1) finish("0", "Output isn't correct: unexpected end of communication");
        if (k != 1 || fscanf(f, "%d", &c) != 1 || c != cpu)
            finish("0", "Output isn't correct: a user process may run elsewhere than the manager");
    }
    fprintf(to0, "0\n");
    fprintf(to1, "0\n");
    fflush(to0);
    fflush(to1);
    finish("1", "Output is correct");
}
