#include "scales.h"
#include <bits/stdc++.h>
using namespace std;

vector<int> alive;  // candidates for the heavy coin

int find_heavy(int N) {
    for (int i = 0; i < N; i++) alive[i] = i;
    int cnt = N;
    while (cnt > 1) {
        int a = (cnt + 2) / 3;
        vector<int> L(alive.begin(), alive.begin() + a);
        vector<int> R(alive.begin() + a, alive.begin() + 2 * a);
        int r = weigh(L, R);
        if (r == 1) cnt = a;
        else if (r == -1) { copy(alive.begin() + a, alive.begin() + 2 * a, alive.begin()); cnt = a; }
        else { copy(alive.begin() + 2 * a, alive.begin() + cnt, alive.begin()); cnt -= 2 * a; }
    }
    return alive[0];
}
