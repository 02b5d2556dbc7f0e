// Forgets the modulus -> WA as soon as a number has 3x + 1 >= 1000003.
#include "pingpong.h"

int pong(int x) { return 3 * x + 1; }
