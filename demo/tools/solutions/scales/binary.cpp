#include "scales.h"
#include <bits/stdc++.h>
using namespace std;

int find_heavy(int N) {
    int lo = 0, hi = N - 1;  // the heavy coin is in [lo, hi]
    while (lo < hi) {
        int len = hi - lo + 1;
        int half = len / 2;
        vector<int> L, R;
        for (int i = 0; i < half; i++) {
            L.push_back(lo + i);
            R.push_back(lo + half + i);
        }
        int r = weigh(L, R);
        if (r == 1) hi = lo + half - 1;
        else if (r == -1) { lo = lo + half; hi = lo + half - 1; }
        else return hi;  // odd length: the coin left out is the heavy one
    }
    return lo;
}
