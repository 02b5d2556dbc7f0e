#include "scales.h"
#include <vector>

int find_heavy(int N) {
    std::vector<int> cand(N);
    for (int i = 0; i < N; i++) cand[i] = i;
    while (cand.size() > 1) {
        int k = cand.size();
        int a = (k + 2) / 3;  // two pans of a coins, the rest (<= a) stays off the scale
        std::vector<int> L(cand.begin(), cand.begin() + a);
        std::vector<int> R(cand.begin() + a, cand.begin() + 2 * a);
        std::vector<int> rest(cand.begin() + 2 * a, cand.end());
        int r = weigh(L, R);
        if (r == 1) cand = L;
        else if (r == -1) cand = R;
        else cand = rest;
    }
    return cand[0];
}
