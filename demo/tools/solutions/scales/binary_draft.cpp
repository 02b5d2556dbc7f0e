#include "scales.h"
#include <bits/stdc++.h>
using namespace std;

int find_heavy(int N) {
    int lo = 0, hi = N - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        vector<int> L, R;
        for (int i = lo; i <= mid; i++) L.push_back(i);
        for (int i = mid + 1; i <= hi; i++) R.push_back(i);
        if (weigh(L, R) == 1) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}
