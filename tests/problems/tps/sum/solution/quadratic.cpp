// Quadratic: fine up to a thousand numbers, far too slow for 100000.
#include "tpssum.h"
long long sum(const std::vector<int> &a) {
    long long s = 0;
    volatile long long sink = 0;
    for (std::size_t i = 0; i < a.size(); i++) {
        for (std::size_t j = 0; j < a.size(); j++) sink = sink + (long long)a[j];
        s += a[i];
    }
    return s;
}
