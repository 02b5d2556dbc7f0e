#include "scales.h"
#include <bits/stdc++.h>
using namespace std;

int find_heavy(int N) {
    vector<int> cand(N);
    iota(cand.begin(), cand.end(), 0);
    while (cand.size() > 1) {
        int k = cand.size();
        int a = (k + 2) / 3;
        vector<int> L(cand.begin(), cand.begin() + a);
        vector<int> R(cand.begin() + a, cand.begin() + 2 * a);
        vector<int> rest(cand.begin() + 2 * a, cand.end());
        int r = weigh(L, R);
        // the heavy coin pushes its pan down, so the result points to the lighter side
        if (r == 1) cand = R;
        else if (r == -1) cand = L;
        else cand = rest;
    }
    return cand[0];
}
