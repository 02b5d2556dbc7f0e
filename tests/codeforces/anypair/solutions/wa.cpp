#include <cstdio>
int main() { int n; scanf("%d", &n); printf("0 %d\n", n); }
