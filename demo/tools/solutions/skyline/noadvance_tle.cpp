#include "skyline.h"
#include <bits/stdc++.h>
using namespace std;

vector<int> next_taller(vector<int> H) {
    int n = H.size();
    vector<int> ans(n, -1);
    vector<int> st;
    int i = n - 1;
    while (i >= 0) {
        while (!st.empty() && H[st.back()] <= H[i]) st.pop_back();
        ans[i] = st.empty() ? -1 : st.back();
        st.push_back(i);
    }
    return ans;
}
