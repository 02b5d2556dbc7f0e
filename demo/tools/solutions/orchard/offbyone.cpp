#include "orchard.h"
#include <bits/stdc++.h>
using namespace std;

vector<long long> split_orchard(vector<int> A) {
    int n = A.size();
    vector<long long> pre(n + 1, 0);
    for (int i = 0; i < n; i++) pre[i + 1] = pre[i] + A[i];
    long long best = LLONG_MAX;
    int bestIdx = 0;
    for (int k = 1; k < n; k++) {
        long long d = llabs(2 * pre[k] - pre[n]);
        if (d < best) {
            best = d;
            bestIdx = k - 1;  // last tree of the left part
        }
    }
    return {best, (long long)bestIdx};
}
