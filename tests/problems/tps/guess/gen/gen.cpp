// gen N [edge]: "N X" with X random in [1, N], or X = N with `edge`.
#include "testlib.h"
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char **argv) {
    registerGen(argc, argv, 1);
    int n = atoi(argv[1]);
    int x = argc > 2 && strcmp(argv[2], "edge") == 0 ? n : rnd.next(1, n);
    printf("%d %d\n", n, x);
}
