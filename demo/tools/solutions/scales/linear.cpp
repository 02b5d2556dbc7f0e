#include "scales.h"
#include <vector>

int find_heavy(int N) {
    // compare coin 0 with every other coin
    for (int i = 1; i < N; i++) {
        int r = weigh({0}, {i});
        if (r == 1) return 0;
        if (r == -1) return i;
    }
    return 0;
}
