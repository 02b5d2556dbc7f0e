// Right, but every 1000th answer first burns 20 ms of CPU time: 0.4 s on a test of 20 000
// numbers (AC), 2 s on one of 100 000 (TLE).
#include <ctime>
#include "pingpong.h"

static int calls = 0;

int pong(int x) {
    if (++calls % 1000 == 0) {
        std::clock_t until = std::clock() + CLOCKS_PER_SEC / 50;
        volatile unsigned long long s = x;
        while (std::clock() < until) s = s * 3 + 1;
    }
    return (3LL * x + 1) % 1000003;
}
