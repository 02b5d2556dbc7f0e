#include <vector>

// Orchard: A[0..N-1] apples on N trees in a row (2 <= N <= 200000, 1 <= A[i] <= 10^9).
// Cutting before tree k (1 <= k <= N-1) gives the left part A[0..k-1] and the right part
// A[k..N-1]. Return {D, k}: D is the smallest possible |left sum - right sum| and k a cut
// that achieves it.
std::vector<long long> split_orchard(std::vector<int> A);
