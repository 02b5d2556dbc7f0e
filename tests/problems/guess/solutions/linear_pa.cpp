// Linear search: right answer but too many queries. n = 10 (7 queries) and n = 100 (90 queries)
// -> 0.4 (PA); n = 10^6 -> more than 100 queries -> WA.
#include "guess.h"

int play(int n) {
    for (int x = 1; x < n; x++)
        if (ask(x) == 0) return x;
    return n;
}
