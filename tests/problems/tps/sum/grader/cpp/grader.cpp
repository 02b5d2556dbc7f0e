// tpssum grader: checks the input secret (the header TPS prepends), prints an output secret,
// then the answer, so that the checker can tell a grader's output from a forged one.
#include "tpssum.h"
#include <cstdio>
#include <cstring>

int main() {
    char secret[64];
    if (scanf("%63s", secret) != 1 || strcmp(secret, "tpssum-input-secret") != 0) {
        printf("tpssum-output-secret\nSV\n");
        return 0;
    }
    int n;
    if (scanf("%d", &n) != 1) return 1;
    std::vector<int> a(n);
    for (int &x : a)
        if (scanf("%d", &x) != 1) return 1;
    long long s = sum(a);
    printf("tpssum-output-secret\nOK\n%lld\n", s);
}
