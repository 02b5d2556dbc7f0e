// One byte per decimal digit: up to 10 bytes -> 0.5 on the big numbers -> PA.
#include "relay.h"
#include <string>

std::vector<int> encode(unsigned int X) {
    std::vector<int> m;
    for (char c : std::to_string(X)) m.push_back(c - '0');
    return m;
}

unsigned int decode(std::vector<int> m) {
    unsigned int x = 0;
    for (int d : m) x = x * 10 + d;
    return x;
}
