// relay stub (Communication, fifo_io, 2 processes): argv = <m_to_u{i}> <u{i}_to_m> <i>.
// Process 0 reads "X", writes "K b1 ... bK". Process 1 reads "K b1 ... bK", writes "Y".
// On EOF from the manager the stub exits quietly with status 0.
#include "relay.h"
#include <csignal>
#include <cstdio>
#include <cstdlib>

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    if (argc < 4) { fprintf(stderr, "stub: expected <in-fifo> <out-fifo> <index>\n"); return 2; }
    FILE *in = fopen(argv[1], "r");
    FILE *out = fopen(argv[2], "w");
    if (!in || !out) { fprintf(stderr, "stub: cannot open FIFOs\n"); return 2; }
    int idx = atoi(argv[3]);
    if (idx == 0) {
        unsigned int X;
        if (fscanf(in, "%u", &X) != 1) return 0;
        std::vector<int> m = encode(X);
        fprintf(out, "%d", (int)m.size());
        for (int b : m) fprintf(out, " %d", b);
        fprintf(out, "\n");
        fflush(out);
    } else {
        int k;
        if (fscanf(in, "%d", &k) != 1) return 0;
        std::vector<int> m(k);
        for (int &b : m)
            if (fscanf(in, "%d", &b) != 1) return 0;
        unsigned int Y = decode(m);
        fprintf(out, "%u\n", Y);
        fflush(out);
    }
    return 0;
}
