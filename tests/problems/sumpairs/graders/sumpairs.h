#include <vector>

// Number of pairs (i, j) with 0 <= i < j < a.size() and a[i] + a[j] == T.
long long count_pairs(int T, std::vector<int> a);
