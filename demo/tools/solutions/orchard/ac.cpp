#include "orchard.h"
#include <vector>
#include <cstdlib>

std::vector<long long> split_orchard(std::vector<int> A) {
    int n = A.size();
    long long total = 0;
    for (int x : A) total += x;
    long long best = -1, bestK = 1, left = 0;
    for (int k = 1; k < n; k++) {
        left += A[k - 1];
        long long d = llabs(2 * left - total);
        if (best < 0 || d < best) {
            best = d;
            bestK = k;
        }
    }
    return {best, bestK};
}
