// Right (four bytes, as ac.cpp), but both processes burn 0.6 s of CPU time as they start, at the
// same time: 1.2 s of computation at once on the one CPU a Communication test's processes
// share. Each process is within its own 1 s CPU limit -> AC; the wait for the CPU is not
// charged to the wall limit.
#include <ctime>
#include "relay.h"

static const bool burnt = [] {
    volatile unsigned long long x = 1;
    while (std::clock() < 0.6 * CLOCKS_PER_SEC) x = x * 3 + 1;
    return true;
}();

std::vector<int> encode(unsigned int X) {
    return {int(X & 255), int(X >> 8 & 255), int(X >> 16 & 255), int(X >> 24)};
}

unsigned int decode(std::vector<int> m) {
    unsigned int x = 0;
    for (int i = (int)m.size() - 1; i >= 0; i--) x = x << 8 | m[i];
    return x;
}
