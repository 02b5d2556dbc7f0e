// The reference workload of `ioi-run doctor`: deterministic, single-threaded, the mix IOI
// solutions spend their time on (integer arithmetic, random memory access over a large array,
// sorting). Its output is a checksum, so nothing can be optimised away.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

int main() {
    const uint32_t n = 1u << 22;  // 16 MiB of uint32_t
    std::vector<uint32_t> a(n);
    uint64_t x = 88172645463325252ull, sum = 0;
    for (uint32_t &v : a) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        v = uint32_t(x);
    }
    uint32_t i = 0;
    for (uint32_t k = 0; k < (1u << 22); k++) {
        i = a[i & (n - 1)] ^ k;
        sum += i;
    }
    std::sort(a.begin(), a.begin() + (1u << 20));
    for (uint32_t k = 0; k < (1u << 20); k += 97) sum += a[k];
    std::vector<uint64_t> dp(1u << 16, 1);
    for (int r = 0; r < 100; r++)
        for (uint32_t k = 1; k < dp.size(); k++) dp[k] = dp[k] * 31 + (dp[k - 1] ^ r);
    sum += dp.back();
    std::printf("%llu\n", (unsigned long long)sum);
}
