// Asks once, then sleeps forever while the manager waits: wall-clock limit -> TLE.
#include "guess.h"
#include <unistd.h>

int play(int n) {
    ask(n / 2 + 1);
    for (;;) sleep(1000);
}
