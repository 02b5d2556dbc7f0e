// Skyline sample grader.
// Input:  N, then H[0] .. H[N-1].
// Output: the N values returned by next_taller, on one line separated by spaces.
#include "skyline.h"
#include <cstdio>
#include <vector>

int main() {
    int N;
    if (scanf("%d", &N) != 1) return 1;
    std::vector<int> H(N);
    for (int i = 0; i < N; i++)
        if (scanf("%d", &H[i]) != 1) return 1;
    std::vector<int> r = next_taller(H);
    for (size_t i = 0; i < r.size(); i++) printf(i ? " %d" : "%d", r[i]);
    printf("\n");
    return 0;
}
