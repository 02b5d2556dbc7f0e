// Four bytes, little endian -> AC.
#include "relay.h"

std::vector<int> encode(unsigned int X) {
    return {int(X & 255), int(X >> 8 & 255), int(X >> 16 & 255), int(X >> 24)};
}

unsigned int decode(std::vector<int> m) {
    unsigned int x = 0;
    for (int i = (int)m.size() - 1; i >= 0; i--) x = x << 8 | m[i];
    return x;
}
