#include <cstdio>
int main() { int n; scanf("%d", &n); printf("%d %d\n", n / 2, n - n / 2); }
