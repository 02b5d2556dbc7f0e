#include "orchard.h"
#include <bits/stdc++.h>
using namespace std;

vector<long long> split_orchard(vector<int> A) {
    int n = A.size();
    long long best = LLONG_MAX, bestK = 1;
    for (int k = 1; k < n; k++) {
        long long L = 0, R = 0;
        for (int i = 0; i < k; i++) L += A[i];
        for (int i = k; i < n; i++) R += A[i];
        if (llabs(L - R) < best) best = llabs(L - R), bestK = k;
    }
    return {best, bestK};
}
