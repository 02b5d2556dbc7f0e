#include "orchard.h"
#include <bits/stdc++.h>
using namespace std;

vector<long long> split_orchard(vector<int> A) {
    int n = A.size();
    vector<int> pre(n + 1, 0);
    for (int i = 0; i < n; i++) pre[i + 1] = pre[i] + A[i];
    int total = pre[n];
    int best = INT_MAX, bestK = 1;
    for (int k = 1; k < n; k++) {
        int d = abs(2 * pre[k] - total);
        if (d < best) {
            best = d;
            bestK = k;
        }
    }
    return {(long long)best, (long long)bestK};
}
