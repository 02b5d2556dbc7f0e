#include "tpsguess.h"
int find_number(int n) {
    int lo = 1, hi = n;
    for (;;) {
        int mid = lo + (hi - lo) / 2, r = ask(mid);
        if (r == 0) return mid;
        if (r < 0) hi = mid - 1; else lo = mid + 1;
    }
}
