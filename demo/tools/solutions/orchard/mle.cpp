#include "orchard.h"
#include <bits/stdc++.h>
using namespace std;

const int MAXN = 200000;
const int LOG = 18;

vector<long long> split_orchard(vector<int> A) {
    int n = A.size();
    // sparse table of range sums over every (start, level, offset) so that any left/right
    // sum can be answered in O(1)
    vector<long long> table((size_t)(MAXN + 1) * LOG * 40, -1);
    for (int i = 0; i < n; i++) table[(size_t)i * LOG * 40] = A[i];
    for (int j = 1; j < LOG; j++)
        for (int i = 0; i + (1 << j) <= n; i++)
            table[(size_t)i * LOG * 40 + j * 40] =
                table[(size_t)i * LOG * 40 + (j - 1) * 40] +
                table[(size_t)(i + (1 << (j - 1))) * LOG * 40 + (j - 1) * 40];
    long long total = 0;
    for (int x : A) total += x;
    long long best = LLONG_MAX, bestK = 1, left = 0;
    for (int k = 1; k < n; k++) {
        left += A[k - 1];
        if (llabs(2 * left - total) < best) best = llabs(2 * left - total), bestK = k;
    }
    return {best + table[0] - A[0], bestK};
}
