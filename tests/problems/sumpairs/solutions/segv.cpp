// Dereferences a null pointer -> killed by SIGSEGV -> RE.
#include "sumpairs.h"

long long count_pairs(int T, std::vector<int> a) {
    volatile int *p = nullptr;
    if (a.size() > 0) *p = T;
    return *p;
}
