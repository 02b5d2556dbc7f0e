// Asks once, then exits with status 0 without answering. The user process "succeeds", so the
// manager's verdict stands: it sees EOF -> "Output isn't correct: unexpected end of
// communication" -> WA.
#include "guess.h"
#include <cstdlib>

int play(int n) {
    ask(n / 2 + 1);
    exit(0);
}
