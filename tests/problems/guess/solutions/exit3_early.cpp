// Asks once, then exits with status 3. A failed user process decides the verdict whatever the
// manager says -> "Runtime error: exit code 3" -> RE.
#include "guess.h"
#include <cstdlib>

int play(int n) {
    ask(n / 2 + 1);
    exit(3);
}
