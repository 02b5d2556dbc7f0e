// Calls exit(3) -> non-zero exit code -> RE.
#include "sumpairs.h"
#include <cstdlib>

long long count_pairs(int, std::vector<int>) {
    exit(3);
}
