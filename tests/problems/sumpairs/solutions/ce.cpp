// Does not compile -> CE everywhere.
#include "sumpairs.h"

long long count_pairs(int T, std::vector<int> a) {
    return undeclared_variable + T
}
