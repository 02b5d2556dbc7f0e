// tpsguess stub in C: stdin/stdout are the manager's FIFOs.
#include "tpsguess.h"
#include <stdio.h>
#include <stdlib.h>

int ask(int y) {
    printf("? %d\n", y);
    fflush(stdout);
    int r;
    if (scanf("%d", &r) != 1) exit(0);
    return r;
}

int main(void) {
    int n;
    if (scanf("%d", &n) != 1) return 0;
    int x = find_number(n);
    printf("! %d\n", x);
    fflush(stdout);
}
