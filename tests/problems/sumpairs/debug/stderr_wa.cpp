// Prints a debugging line on stderr and answers one too many: WA on every test, with the line
// in the reasons `judge` shows.
#include "sumpairs.h"
#include <cstdio>
#include <unordered_map>

long long count_pairs(int T, std::vector<int> a) {
    fprintf(stderr, "debug: n=%d T=%d\n", (int)a.size(), T);
    std::unordered_map<long long, long long> seen;
    long long cnt = 0;
    for (int x : a) {
        auto it = seen.find((long long)T - x);
        if (it != seen.end()) cnt += it->second;
        seen[x]++;
    }
    return cnt + 1;
}
