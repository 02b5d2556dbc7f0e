#include <vector>

// Skyline: H[0..N-1] are the heights of N buildings from west to east
// (1 <= N <= 200000, 1 <= H[i] <= 10^9). For every i, return the index of the nearest
// building east of i that is strictly taller than building i, or -1 if there is none.
std::vector<int> next_taller(std::vector<int> H);
