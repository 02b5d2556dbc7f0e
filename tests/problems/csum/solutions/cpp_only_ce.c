// C++ written in a .c file: gcc compiles it as C -> CE.
#include "csum.h"
#include <vector>

long long sum_all(int n, const int *a) {
    std::vector<int> v(a, a + n);
    long long s = 0;
    for (int x : v) s += x;
    return s;
}
