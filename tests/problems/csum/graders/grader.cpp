// csum grader in C++: reads n then a[0..n-1], prints sum_all(n, a).
#include "csum.h"
#include <cstdio>
#include <vector>

int main() {
    int n;
    if (scanf("%d", &n) != 1) return 1;
    std::vector<int> a(n);
    for (int &x : a)
        if (scanf("%d", &x) != 1) return 1;
    printf("%lld\n", sum_all(n, a.data()));
    return 0;
}
