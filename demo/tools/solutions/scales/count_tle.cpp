#include "scales.h"
#include <bits/stdc++.h>
using namespace std;

int find_heavy(int N) {
    // number of weighings we are going to need: ceil(log3 N)
    int need = 0;
    for (int k = N; k >= 1; k = (k + 2) / 3) need++;
    vector<int> cand(N);
    iota(cand.begin(), cand.end(), 0);
    for (int step = 0; step < need && cand.size() > 1; step++) {
        int k = cand.size();
        int a = (k + 2) / 3;
        vector<int> L(cand.begin(), cand.begin() + a);
        vector<int> R(cand.begin() + a, cand.begin() + 2 * a);
        vector<int> rest(cand.begin() + 2 * a, cand.end());
        int r = weigh(L, R);
        cand = r == 1 ? L : (r == -1 ? R : rest);
    }
    return cand[0];
}
