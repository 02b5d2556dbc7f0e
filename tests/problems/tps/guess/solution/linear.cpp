#include "tpsguess.h"
int find_number(int n) {
    for (int y = 1; y < n; y++)
        if (ask(y) == 0) return y;
    return n;
}
