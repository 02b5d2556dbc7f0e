// Orchard checker: checker <input> <correct_output> <contestant_output>
// stdout: score in [0, 1]; stderr: message.
//   D is the minimum and the cut k achieves it -> 1   "Output is correct"
//   D is the minimum, k is not a valid cut for it -> 0.5 "Output is partially correct"
//   otherwise                                    -> 0   "Output isn't correct"
#include <cstdio>
#include <cstdlib>
#include <vector>

static void verdict(const char *score, const char *msg) {
    printf("%s\n", score);
    fprintf(stderr, "%s\n", msg);
    fflush(stdout);
    fflush(stderr);
    exit(0);
}

int main(int argc, char **argv) {
    if (argc < 4) verdict("0", "Checker usage error");
    FILE *fi = fopen(argv[1], "r"), *fc = fopen(argv[2], "r"), *fo = fopen(argv[3], "r");
    if (!fi || !fc) verdict("0", "Checker error: cannot open input or correct output");
    int n;
    if (fscanf(fi, "%d", &n) != 1 || n < 2) verdict("0", "Checker error: bad input");
    std::vector<long long> pre(n + 1, 0);
    for (int i = 0; i < n; i++) {
        long long a;
        if (fscanf(fi, "%lld", &a) != 1) verdict("0", "Checker error: bad input");
        pre[i + 1] = pre[i] + a;
    }
    long long want;
    if (fscanf(fc, "%lld", &want) != 1) verdict("0", "Checker error: bad correct output");
    long long best = -1;
    for (int k = 1; k < n; k++) {
        long long d = llabs(2 * pre[k] - pre[n]);
        if (best < 0 || d < best) best = d;
    }
    if (best != want) verdict("0", "Checker error: correct output disagrees with the input");
    long long d, k;
    if (!fo || fscanf(fo, "%lld %lld", &d, &k) != 2) verdict("0", "Output isn't correct");
    char extra[2];
    if (fscanf(fo, "%1s", extra) == 1) verdict("0", "Output isn't correct");
    if (d != want) verdict("0", "Output isn't correct");
    if (k >= 1 && k < n && llabs(2 * pre[k] - pre[n]) == d) verdict("1", "Output is correct");
    verdict("0.5", "Output is partially correct");
}
