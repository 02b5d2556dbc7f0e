#include "orchard.h"
#include <bits/stdc++.h>
using namespace std;

vector<long long> split_orchard(vector<int> A) {
    int n = A.size();
    long long total = accumulate(A.begin(), A.end(), 0LL)
    long long left = 0, best = LLONG_MAX, bestK = 1;
    for (int k = 1; k < n; k++) {
        left += A[k - 1];
        long long d = llabs(2 * left - total);
        if (d < best) { best = d; bestK = k; }
    }
    return {best, bestK};
}
