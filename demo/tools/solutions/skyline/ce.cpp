#include "skyline.h"

std::vector<int> next_taller(std::vector<int> H) {
    int n = H.size();
    vector<int> ans(n, -1);
    vector<int> st;
    for (int i = n - 1; i >= 0; i--) {
        while (!st.empty() && H[st.back()] <= H[i]) st.pop_back();
        if (!st.empty()) ans[i] = st.back();
        st.push_back(i);
    }
    return ans;
}
