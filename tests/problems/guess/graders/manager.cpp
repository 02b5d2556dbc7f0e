// guess manager: manager <u0_to_m> <m_to_u0>, stdin = input.txt ("n S").
// Prints the score on stdout and the message on stderr, always exits 0.
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>

static void finish(const char *score, const char *msg) {
    printf("%s\n", score);
    fprintf(stderr, "%s\n", msg);
    fflush(stdout);
    fflush(stderr);
    exit(0);
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);  // the user may die at any time
    if (argc < 3) finish("0", "Judge failure: manager needs 2 FIFO paths");
    long long n, S;
    if (scanf("%lld %lld", &n, &S) != 2) finish("0", "Judge failure: bad input");
    // Open the user's stdin first, as the user opens its stdin before its stdout.
    FILE *to_user = fopen(argv[2], "w");
    FILE *from_user = fopen(argv[1], "r");
    if (!to_user || !from_user) finish("0", "Judge failure: cannot open FIFOs");
    int best = 0;
    while ((1LL << best) < n + 1) best++;  // ceil(log2(n + 1))
    fprintf(to_user, "%lld\n", n);
    fflush(to_user);
    int queries = 0;
    char op[4];
    long long x;
    for (;;) {
        if (fscanf(from_user, "%3s %lld", op, &x) != 2)
            finish("0", "Output isn't correct: unexpected end of communication");
        if (op[0] == '?') {
            if (++queries > 100) finish("0", "Output isn't correct: too many queries");
            if (x < 1 || x > n) finish("0", "Output isn't correct: query out of range");
            fprintf(to_user, "%d\n", x == S ? 0 : (S > x ? 1 : -1));
            fflush(to_user);
        } else if (op[0] == '!') {
            if (x != S) finish("0", "Output isn't correct: wrong answer");
            if (queries <= best) finish("1", "Output is correct");
            finish("0.4", "Output is partially correct: too many queries");
        } else {
            finish("0", "Output isn't correct: protocol violation");
        }
    }
}
