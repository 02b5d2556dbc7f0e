#include "tpssum.h"
long long sum(const std::vector<int> &a) {
    long long s = 1;
    for (int x : a) s += x;
    return s;
}
