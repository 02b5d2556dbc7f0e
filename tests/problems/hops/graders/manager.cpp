// hops manager: manager <u0_to_m> <m_to_u0>, stdin = input.txt ("n q seed").
// Asks q queries "s t" one at a time, each after the previous answer; prints the score on
// stdout and the message on stderr, always exits 0.
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
    long long n, q, seed;
    if (scanf("%lld %lld %lld", &n, &q, &seed) != 3 || n < 2) finish("0", "Judge failure: bad input");
    // The user opens its input FIFO first.
    FILE *to_user = fopen(argv[2], "w");
    FILE *from_user = fopen(argv[1], "r");
    if (!to_user || !from_user) finish("0", "Judge failure: cannot open FIFOs");
    unsigned long long state = seed;
    auto next = [&](long long bound) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return (long long)((state >> 33) % (unsigned long long)bound);
    };
    for (long long i = 0; i < q; i++) {
        long long s = next(n), t = next(n - 1);
        if (t >= s) t++;
        fprintf(to_user, "%lld %lld\n", s, t);
        fflush(to_user);
        long long hop;
        if (fscanf(from_user, "%lld", &hop) != 1)
            finish("0", "Output isn't correct: unexpected end of communication");
        if (hop != (t > s ? s + 1 : s - 1)) finish("0", "Output isn't correct: wrong hop");
    }
    fprintf(to_user, "-1 -1\n");
    fflush(to_user);
    finish("1", "Output is correct");
}
