// Answers the first 1000 numbers, then exits with status 3 -> RE.
#include <cstdlib>
#include "pingpong.h"

static int calls = 0;

int pong(int x) {
    if (++calls > 1000) std::exit(3);
    return (3LL * x + 1) % 1000003;
}
