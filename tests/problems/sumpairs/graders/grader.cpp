// sumpairs grader: reads "n T" then a[0..n-1], prints count_pairs(T, a).
#include "sumpairs.h"
#include <cstdio>
#include <vector>

int main() {
    int n, T;
    if (scanf("%d %d", &n, &T) != 2) return 1;
    std::vector<int> a(n);
    for (int i = 0; i < n; i++)
        if (scanf("%d", &a[i]) != 1) return 1;
    long long r = count_pairs(T, a);
    printf("%lld\n", r);
    return 0;
}
