// The sender (process 0) burns CPU forever; the receiver waits -> TLE.
#include "relay.h"

std::vector<int> encode(unsigned int X) {
    volatile unsigned long long x = X;
    for (;;) x = x * 3 + 1;
}

unsigned int decode(std::vector<int> m) {
    return m.size();
}
