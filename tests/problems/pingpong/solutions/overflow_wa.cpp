// Forgets the modulus -> WA at the first number with 3x + 1 >= 1000003 (in the sample already).
#include "pingpong.h"

int pong(int x) { return 3 * x + 1; }
