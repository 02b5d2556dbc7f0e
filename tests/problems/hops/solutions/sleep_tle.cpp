// Sleeps forever at the first packet -> TLE (the wall limit stops it).
#include <unistd.h>
#include "hops.h"

int next_hop(int, int) {
    for (;;) pause();
}
