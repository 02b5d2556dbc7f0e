// hops stub (Communication, fifo_io, 1 process): argv = <m_to_u0> <u0_to_m>. Reads "s t" and
// answers "next_hop(s, t)", flushing each answer, until the manager sends "-1 -1" or closes the
// pipe (then it exits quietly with status 0).
#include "hops.h"
#include <csignal>
#include <cstdio>

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    if (argc < 3) { fprintf(stderr, "stub: expected <in-fifo> <out-fifo>\n"); return 2; }
    FILE *in = fopen(argv[1], "r");
    FILE *out = fopen(argv[2], "w");
    if (!in || !out) { fprintf(stderr, "stub: cannot open FIFOs\n"); return 2; }
    int s, t;
    while (fscanf(in, "%d %d", &s, &t) == 2 && s >= 0) {
        fprintf(out, "%d\n", next_hop(s, t));
        fflush(out);
    }
    return 0;
}
