#include "skyline.h"
#include <bits/stdc++.h>
using namespace std;

vector<int> next_taller(vector<int> H) {
    int n = H.size();
    vector<int> ans(n, -1);
    // next[i]: jump over the buildings that are not taller, reusing earlier answers
    for (int i = n - 1; i >= 0; i--) {
        int j = i + 1;
        while (H.at(j) <= H[i]) {
            if (ans[j] == -1) { j = -1; break; }
            j = ans[j];
        }
        ans[i] = j;
    }
    return ans;
}
