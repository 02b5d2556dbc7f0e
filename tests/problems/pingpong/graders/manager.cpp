// pingpong manager: manager <u0_to_m> <m_to_u0>, stdin = input.txt ("q seed").
// Sends q numbers one at a time, each after the previous answer; prints the score on stdout and
// the message on stderr, always exits 0.
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
    signal(SIGPIPE, SIG_IGN);
    if (argc < 3) finish("0", "Judge failure: manager needs 2 FIFO paths");
    long long q, seed;
    if (scanf("%lld %lld", &q, &seed) != 2) finish("0", "Judge failure: bad input");
    FILE *to_user = fopen(argv[2], "w");
    FILE *from_user = fopen(argv[1], "r");
    if (!to_user || !from_user) finish("0", "Judge failure: cannot open FIFOs");
    unsigned long long state = seed;
    for (long long i = 0; i < q; i++) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        int x = (int)(state >> 33) % 1000003;
        fprintf(to_user, "%d\n", x);
        fflush(to_user);
        long long y;
        if (fscanf(from_user, "%lld", &y) != 1)
            finish("0", "Output isn't correct: unexpected end of communication");
        if (y != (3LL * x + 1) % 1000003) finish("0", "Output isn't correct: wrong answer");
    }
    fprintf(to_user, "-1\n");
    fflush(to_user);
    finish("1", "Output is correct");
}
