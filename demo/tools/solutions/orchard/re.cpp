#include "orchard.h"
#include <bits/stdc++.h>
using namespace std;

vector<long long> split_orchard(vector<int> A) {
    int n = A.size();
    vector<long long> pre(n + 1, 0);
    for (int i = 0; i < n; i++) pre[i + 1] = pre[i] + A[i];
    long long total = pre[n];
    long long best = LLONG_MAX, bestK = 1;
    for (int k = 0; k < n; k++) {
        // average apples per tree on each side, used to break ties towards balanced halves
        long long avgLeft = pre[k] / k;
        long long avgRight = (total - pre[k]) / (n - k);
        long long d = llabs(2 * pre[k] - total);
        bool tie = avgLeft == avgRight && d == best;
        if (tie || (k >= 1 && d < best)) {
            best = d;
            bestK = k;
        }
    }
    return {best, bestK};
}
