#include "scales.h"
#include <bits/stdc++.h>
using namespace std;

int find_heavy(int N) {
    vector<int> cand(N);
    iota(cand.begin(), cand.end(), 0);
    while (cand.size() > 1) {
        int a = (cand.size() + 2) / 3;
        vector<int> L(cand.begin(), cand.begin() + a);
        vector<int> R(cand.begin() + a, cand.begin() + 2 * a);
        vector<int> rest(cand.begin() + 2 * a, cand.end());
        int r = weight(L, R);
        cand = r == 1 ? L : (r == -1 ? R : rest);
    }
    return cand[0];
}
