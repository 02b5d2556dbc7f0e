// Reads one past the end of a vector. The reference profile may well print a number; the
// debug profile stops at the read and names this file's line 9.
#include "sumpairs.h"

long long count_pairs(int T, std::vector<int> a) {
    std::vector<int> b(a.size());
    long long s = 0;
    for (unsigned i = 0; i <= a.size(); i++)
        s += b[i];
    return s + T;
}
