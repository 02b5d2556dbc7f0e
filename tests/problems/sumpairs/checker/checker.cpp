// sumpairs checker (CMS/testlib convention): checker <input> <correct_output> <contestant_output>
// stdout: score in [0, 1]; stderr: message.
//   exact answer                      -> 1   "Output is correct"
//   twice the answer (ordered pairs)  -> 0.5 "Output is partially correct"
//   anything else                     -> 0   "Output isn't correct"
#include <cstdio>

static void verdict(const char *score, const char *msg) {
    printf("%s\n", score);
    fprintf(stderr, "%s\n", msg);
    fflush(stdout);
    fflush(stderr);
}

int main(int argc, char **argv) {
    if (argc < 4) { verdict("0", "Checker usage error"); return 0; }
    FILE *fc = fopen(argv[2], "r"), *fo = fopen(argv[3], "r");
    long long want = 0, got = 0;
    if (!fc || fscanf(fc, "%lld", &want) != 1) { verdict("0", "Checker error: bad correct output"); return 0; }
    if (!fo || fscanf(fo, "%lld", &got) != 1) { verdict("0", "Output isn't correct: no number found"); return 0; }
    char extra[2];
    if (fscanf(fo, "%1s", extra) == 1) { verdict("0", "Output isn't correct: extra output"); return 0; }
    if (got == want) verdict("1", "Output is correct");
    else if (got == 2 * want) verdict("0.5", "Output is partially correct");
    else verdict("0", "Output isn't correct");
    return 0;
}
