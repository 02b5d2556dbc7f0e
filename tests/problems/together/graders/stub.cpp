// together stub (Communication, fifo_io, 2 processes): argv = <m_to_u{i}> <u{i}_to_m> <i>.
// Writes the CPUs this process may run on ("k c1 ... ck"), then waits for the manager's "0".
#include "together.h"
#include <sched.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    if (argc < 4) { fprintf(stderr, "stub: expected <in-fifo> <out-fifo> <index>\n"); return 2; }
    FILE *in = fopen(argv[1], "r");
    FILE *out = fopen(argv[2], "w");
    if (!in || !out) { fprintf(stderr, "stub: cannot open FIFOs\n"); return 2; }
    greet(atoi(argv[3]));
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 2;
    fprintf(out, "%d", CPU_COUNT(&set));
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) fprintf(out, " %d", c);
    fprintf(out, "\n");
    fflush(out);
    int done;
    if (fscanf(in, "%d", &done) != 1) return 0;
    return 0;
}
