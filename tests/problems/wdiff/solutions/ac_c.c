// Canonical output, in C (own main, no grader): judged like ac.cpp.
#include <stdio.h>

int main(void) {
    int n;
    if (scanf("%d", &n) != 1) return 1;
    static int row[2048], next[2048];
    int len = 1;
    row[0] = 1;
    for (int r = 0; r < n; r++) {
        for (int i = 0; i < len; i++) printf(i ? " %d" : "%d", row[i]);
        printf("\n");
        next[0] = 1;
        for (int i = 0; i + 1 < len; i++) next[i + 1] = (row[i] + row[i + 1]) % 1000;
        next[len] = 1;
        len++;
        for (int i = 0; i < len; i++) row[i] = next[i];
    }
    return 0;
}
