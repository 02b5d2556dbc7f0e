#include "skyline.h"
#include <vector>

std::vector<int> next_taller(std::vector<int> H) {
    int n = H.size();
    std::vector<int> ans(n, -1), st;
    for (int i = n - 1; i >= 0; i--) {
        while (!st.empty() && H[st.back()] <= H[i]) st.pop_back();
        ans[i] = st.empty() ? -1 : st.back();
        st.push_back(i);
    }
    return ans;
}
