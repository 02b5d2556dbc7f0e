// Right (four bytes, as ac.cpp), but the sender first burns 0.6 s of CPU time, 60 % of the time
// limit -> AC (the limit is CPU time).
#include <ctime>
#include "relay.h"

std::vector<int> encode(unsigned int X) {
    volatile unsigned long long x = X;
    while (std::clock() < 0.6 * CLOCKS_PER_SEC) x = x * 3 + 1;
    return {int(X & 255), int(X >> 8 & 255), int(X >> 16 & 255), int(X >> 24)};
}

unsigned int decode(std::vector<int> m) {
    unsigned int x = 0;
    for (int i = (int)m.size() - 1; i >= 0; i--) x = x << 8 | m[i];
    return x;
}
