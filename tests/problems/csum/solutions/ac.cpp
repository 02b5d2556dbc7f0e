// Correct, in C++.
#include "csum.h"
#include <numeric>

long long sum_all(int n, const int *a) { return std::accumulate(a, a + n, 0LL); }
