// Overflows on the full subtask's large values.
#include "tpssum.h"
long long sum(const std::vector<int> &a) {
    int s = 0;
    for (int x : a) s = (int)((unsigned)s + (unsigned)x);
    return s;
}
