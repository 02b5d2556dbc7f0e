#include "orchard.h"
#include <bits/stdc++.h>
using namespace std;

vector<long long> split_orchard(vector<int> A) {
    int n = A.size();
    long long total = 0;
    for (int x : A) total += x;
    // Walk from the left until the left part is at least as heavy as the right part:
    // that is where the difference changes sign, so it must be the optimum.
    long long left = 0;
    int k = 1;
    for (; k < n; k++) {
        left += A[k - 1];
        if (2 * left >= total) break;
    }
    if (k == n) k = n - 1;
    return {llabs(2 * left - total), (long long)k};
}
