#include "skyline.h"
#include <bits/stdc++.h>
using namespace std;

vector<int> next_taller(vector<int> H) {
    int n = H.size();
    // firstAbove[v] = nearest index seen so far (scanning from the east) with height > v.
    // Heights are hashed into 2^28 buckets so the table stays "small".
    const int BUCKETS = 1 << 28;
    vector<int> firstAbove(BUCKETS, -1);
    vector<int> ans(n, -1);
    for (int i = n - 1; i >= 0; i--) {
        int b = H[i] & (BUCKETS - 1);
        ans[i] = firstAbove[b];
        for (int v = 0; v < b && v < 64; v++) firstAbove[v] = i;
    }
    vector<int> st;
    for (int i = n - 1; i >= 0; i--) {
        while (!st.empty() && H[st.back()] <= H[i]) st.pop_back();
        ans[i] = st.empty() ? -1 : st.back();
        st.push_back(i);
    }
    return ans;
}
