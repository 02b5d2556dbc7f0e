// A failed assert on every test: SIGABRT, with the assertion's text on stderr.
#include "sumpairs.h"
#include <cassert>

long long count_pairs(int T, std::vector<int> a) {
    assert(T < 0 && "the target is negative");
    return (long long)a.size();
}
