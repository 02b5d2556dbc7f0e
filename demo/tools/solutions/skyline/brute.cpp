#include "skyline.h"
#include <vector>

std::vector<int> next_taller(std::vector<int> H) {
    int n = H.size();
    std::vector<int> ans(n, -1);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (H[j] > H[i]) { ans[i] = j; break; }
    return ans;
}
