// Allocates and touches 64 MiB chunks up to ~1 GiB (limit 256 MiB) -> MLE.
#include "sumpairs.h"
#include <cstring>
#include <memory>

long long count_pairs(int, std::vector<int> a) {
    std::vector<std::unique_ptr<char[]>> chunks;
    long long sum = 0;
    for (int i = 0; i < 16; i++) {
        chunks.emplace_back(new char[64 << 20]);
        memset(chunks.back().get(), i + 1, 64 << 20);
        sum += chunks.back()[12345];
    }
    return sum + a.size();
}
