// Correct: hash counting, O(n).
#include "sumpairs.h"
#include <unordered_map>

long long count_pairs(int T, std::vector<int> a) {
    std::unordered_map<long long, long long> seen;
    seen.reserve(a.size() * 2);
    long long cnt = 0;
    for (int x : a) {
        auto it = seen.find((long long)T - x);
        if (it != seen.end()) cnt += it->second;
        seen[x]++;
    }
    return cnt;
}
