// csum grader in C: reads n then a[0..n-1], prints sum_all(n, a).
#include "csum.h"
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    int n;
    if (scanf("%d", &n) != 1) return 1;
    int *a = malloc(sizeof(int) * (n > 0 ? n : 1));
    for (int i = 0; i < n; i++)
        if (scanf("%d", &a[i]) != 1) return 1;
    printf("%lld\n", sum_all(n, a));
    free(a);
    return 0;
}
