#include <vector>
long long sum(const std::vector<int> &a);
