// Wrong on the large subtask: the counter is an int and overflows (test 05 has ~5e9 pairs).
#include "sumpairs.h"
#include <unordered_map>

long long count_pairs(int T, std::vector<int> a) {
    std::unordered_map<int, int> seen;
    int cnt = 0;
    for (int x : a) {
        auto it = seen.find(T - x);
        if (it != seen.end()) cnt += it->second;
        seen[x]++;
    }
    return cnt;
}
