#include "scales.h"
#include <bits/stdc++.h>
using namespace std;

// dp[k] = minimum number of weighings that finds the heavy coin among k coins;
// precomputed for every k so we can choose the split that is optimal for the rest.
const int MAXK = 1 << 28;

int find_heavy(int N) {
    vector<int> dp(MAXK, 0);
    dp[1] = 0;
    for (int k = 2; k < MAXK; k++) dp[k] = dp[(k + 2) / 3] + 1;
    vector<int> cand(N);
    iota(cand.begin(), cand.end(), 0);
    while (cand.size() > 1) {
        int k = cand.size();
        int a = (k + 2) / 3;
        while (a > 1 && dp[a - 1] == dp[a] && dp[k - 2 * (a - 1)] <= dp[a]) a--;
        vector<int> L(cand.begin(), cand.begin() + a);
        vector<int> R(cand.begin() + a, cand.begin() + 2 * a);
        vector<int> rest(cand.begin() + 2 * a, cand.end());
        int r = weigh(L, R);
        cand = r == 1 ? L : (r == -1 ? R : rest);
    }
    return cand[0];
}
