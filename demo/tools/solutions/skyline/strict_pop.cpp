#include "skyline.h"
#include <bits/stdc++.h>
using namespace std;

vector<int> next_taller(vector<int> H) {
    int n = H.size();
    vector<int> ans(n, -1);
    stack<int> st;  // indices with decreasing heights
    for (int i = n - 1; i >= 0; i--) {
        while (!st.empty() && H[st.top()] < H[i]) st.pop();
        if (!st.empty()) ans[i] = st.top();
        st.push(i);
    }
    return ans;
}
