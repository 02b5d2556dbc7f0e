// Binary search with a debugging print on stdout, which in this std_io task is the pipe to the
// manager: the manager reads "lo=" as a query and answers "protocol violation" -> WA.
#include "guess.h"
#include <cstdio>

int play(int n) {
    int lo = 1, hi = n;
    printf("lo=%d hi=%d\n", lo, hi);
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int r = ask(mid);
        if (r == 0) return mid;
        if (r > 0) lo = mid + 1; else hi = mid - 1;
    }
    return lo;
}
