#include <vector>

// Scales: N coins (2 <= N <= 100000) numbered 0..N-1 look the same, but exactly one is
// heavier than the others, which all weigh the same.
//
// weigh(left, right) puts the coins of `left` on the left pan and those of `right` on the
// right pan (same number of coins on both pans, every coin at most once) and returns
//    1 if the left pan is heavier, -1 if the right pan is heavier, 0 if they balance.
//
// find_heavy(N) must return the index of the heavy coin.
int weigh(std::vector<int> left, std::vector<int> right);
int find_heavy(int N);
