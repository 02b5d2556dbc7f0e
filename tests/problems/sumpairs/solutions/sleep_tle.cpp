// Sleeps forever without using CPU: only the wall-clock limit stops it -> TLE everywhere.
#include "sumpairs.h"
#include <unistd.h>

long long count_pairs(int, std::vector<int>) {
    for (;;) sleep(1000);
    return 0;
}
