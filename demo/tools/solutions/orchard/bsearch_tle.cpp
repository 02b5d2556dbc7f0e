#include "orchard.h"
#include <bits/stdc++.h>
using namespace std;

vector<long long> split_orchard(vector<int> A) {
    int n = A.size();
    vector<long long> pre(n + 1, 0);
    for (int i = 0; i < n; i++) pre[i + 1] = pre[i] + A[i];
    long long total = pre[n];
    // 2*pre[k] - total is increasing in k: binary search for the last k where it is negative.
    int lo = 1, hi = n - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (2 * pre[mid] < total) lo = mid;
        else hi = mid;
    }
    long long bestD = llabs(2 * pre[lo] - total);
    int bestK = lo;
    if (lo + 1 <= n - 1 && llabs(2 * pre[lo + 1] - total) < bestD) {
        bestD = llabs(2 * pre[lo + 1] - total);
        bestK = lo + 1;
    }
    return {bestD, (long long)bestK};
}
