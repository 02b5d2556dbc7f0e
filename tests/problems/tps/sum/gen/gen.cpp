// gen N MAXV: N numbers in [-MAXV, MAXV] (deterministic: seeded by the arguments).
#include "testlib.h"
#include <cstdio>
#include <cstdlib>

int main(int argc, char **argv) {
    registerGen(argc, argv, 1);
    int n = atoi(argv[1]);
    long long maxv = atoll(argv[2]);
    printf("%d\n", n);
    for (int i = 0; i < n; i++) printf("%lld%c", rnd.next(-maxv, maxv), i + 1 < n ? ' ' : '\n');
}
