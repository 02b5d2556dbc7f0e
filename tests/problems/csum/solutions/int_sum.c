// Sums in an int: overflows on the large test -> WA there.
#include "csum.h"

long long sum_all(int n, const int *a) {
    int s = 0;
    for (int i = 0; i < n; i++) s += a[i];
    return s;
}
