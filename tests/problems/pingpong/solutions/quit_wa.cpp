// Answers the first 1000 numbers, then exits quietly with status 0 -> WA (the manager sees the
// end of the conversation).
#include <cstdlib>
#include "pingpong.h"

static int calls = 0;

int pong(int x) {
    if (++calls > 1000) std::exit(0);
    return (3LL * x + 1) % 1000003;
}
