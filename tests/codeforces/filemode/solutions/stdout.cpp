// Right answer, wrong place: with INPUT_MODE=file only output.txt counts.
#include <cstdio>
int main() {
    long long a, b;
    FILE* in = fopen("input.txt", "r");
    if (!in || fscanf(in, "%lld %lld", &a, &b) != 2) return 1;
    printf("%lld\n", a * b);
}
