#include <cstdio>
int main() { int* volatile p = nullptr; *p = 1; puts("6"); }
