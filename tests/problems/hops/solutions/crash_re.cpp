// Right for the first 1000 packets, then dereferences a null pointer -> RE (signal 11).
#include "hops.h"

static int calls = 0;

int next_hop(int s, int t) {
    if (++calls > 1000) *(volatile int *)nullptr = 0;
    return t > s ? s + 1 : s - 1;
}
