// Correct, in C: sums in a long long. Uses the maths library (gcc links it with -lm only).
#include "csum.h"
#include <math.h>

long long sum_all(int n, const int *a) {
    long long s = 0;
    for (int i = 0; i < n; i++) s += a[i];
    return s + (long long)floor(sqrt(0.0));
}
