// Decodes X + 1 -> WA, and prints its message on stdout, which in this fifo_io task nobody
// reads (process 0 talks to the manager through the FIFOs it is given).
#include "relay.h"
#include <cstdio>

std::vector<int> encode(unsigned int X) {
    printf("encoding %u\n", X);
    fflush(stdout);
    return {int(X & 255), int(X >> 8 & 255), int(X >> 16 & 255), int(X >> 24)};
}

unsigned int decode(std::vector<int> m) {
    unsigned int x = 0;
    for (int i = (int)m.size() - 1; i >= 0; i--) x = x << 8 | m[i];
    return x + 1;
}
