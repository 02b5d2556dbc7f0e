// Partially correct: counts ordered pairs (i != j), i.e. twice the answer -> checker gives 0.5.
#include "sumpairs.h"
#include <map>

long long count_pairs(int T, std::vector<int> a) {
    std::map<long long, long long> c;
    for (int x : a) c[x]++;
    long long cnt = 0;
    for (auto [v, k] : c) {
        auto it = c.find((long long)T - v);
        if (it == c.end()) continue;
        if (it->first == v) cnt += k * (k - 1);
        else cnt += k * it->second;
    }
    return cnt;
}
