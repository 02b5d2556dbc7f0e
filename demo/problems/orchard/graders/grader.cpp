// Orchard sample grader.
// Input:  N, then A[0] .. A[N-1].
// Output: "D k", the two values returned by split_orchard.
#include "orchard.h"
#include <cstdio>
#include <vector>

int main() {
    int N;
    if (scanf("%d", &N) != 1) return 1;
    std::vector<int> A(N);
    for (int i = 0; i < N; i++)
        if (scanf("%d", &A[i]) != 1) return 1;
    std::vector<long long> r = split_orchard(A);
    if (r.size() != 2) {
        printf("-1 -1\n");
        return 0;
    }
    printf("%lld %lld\n", r[0], r[1]);
    return 0;
}
