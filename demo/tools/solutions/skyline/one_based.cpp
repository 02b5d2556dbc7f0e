#include "skyline.h"
#include <bits/stdc++.h>
using namespace std;

vector<int> next_taller(vector<int> H) {
    int n = H.size();
    vector<int> ans(n, -1);
    vector<int> st;
    for (int i = n - 1; i >= 0; i--) {
        while (!st.empty() && H[st.back()] <= H[i]) st.pop_back();
        if (!st.empty()) ans[i] = st.back() + 1;  // buildings are numbered from 1
        st.push_back(i);
    }
    return ans;
}
