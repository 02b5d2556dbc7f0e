#include <cstdio>
#include <cstring>
#include <cstdlib>
int main() {
    // 256 MiB touched, with a 64 MB limit.
    for (int i = 0; i < 16; i++) { char* p = (char*)malloc(16 << 20); memset(p, 1, 16 << 20); }
    puts("6\nYES");
}
