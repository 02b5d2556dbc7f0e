// Correct on n <= 1000, burns CPU forever on bigger inputs -> TLE on 02-large.
#include "sumpairs.h"

long long count_pairs(int T, std::vector<int> a) {
    int n = a.size();
    if (n > 1000) {
        volatile unsigned long long x = 0;
        for (;;) x = x + 1;
    }
    long long cnt = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if ((long long)a[i] + a[j] == T) cnt++;
    return cnt;
}
