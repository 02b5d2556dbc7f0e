// Forks a child that sleeps forever (holding the output file open), then answers correctly.
// The judge must not wait for the child and must kill it -> AC. (A sandbox that forbids fork
// makes fork() fail, which this solution ignores.)
#include "sumpairs.h"
#include <unistd.h>
#include <unordered_map>

long long count_pairs(int T, std::vector<int> a) {
    if (fork() == 0) {
        for (;;) sleep(1000);
    }
    std::unordered_map<long long, long long> seen;
    long long cnt = 0;
    for (int x : a) {
        auto it = seen.find((long long)T - x);
        if (it != seen.end()) cnt += it->second;
        seen[x]++;
    }
    return cnt;
}
