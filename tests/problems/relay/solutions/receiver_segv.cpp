// The receiver (process 1) dereferences a null pointer -> RE (killed by signal 11), even
// though the sender did its job.
#include "relay.h"

std::vector<int> encode(unsigned int X) {
    return {int(X & 255), int(X >> 8 & 255), int(X >> 16 & 255), int(X >> 24)};
}

unsigned int decode(std::vector<int> m) {
    volatile int *p = nullptr;
    *p = (int)m.size();
    return *p;
}
