// Scales manager: manager <u0_to_m> <m_to_u0>, stdin = input.txt ("N H Q P").
// H is the heavy coin. Q and P are the weighing limits of the test: at most Q weighings give
// score 1, at most P weighings give 0.5, the (P+1)-th weighing is wrong.
// Prints the score on stdout and the message on stderr, always exits 0.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <vector>

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
    int N, H, Q, P;
    if (scanf("%d %d %d %d", &N, &H, &Q, &P) != 4) finish("0", "Judge failure: bad input");
    // Open the user's stdin first, as the user opens its stdin before its stdout.
    FILE *to_user = fopen(argv[2], "w");
    FILE *from_user = fopen(argv[1], "r");
    if (!to_user || !from_user) finish("0", "Judge failure: cannot open FIFOs");
    fprintf(to_user, "%d\n", N);
    fflush(to_user);
    std::vector<int> mark(N, 0);  // weighing in which the coin was last used
    int weighings = 0;
    char op[4];
    for (;;) {
        if (fscanf(from_user, "%3s", op) != 1) finish("0", "Output isn't correct");
        if (op[0] == '?') {
            if (++weighings > P) finish("0", "Output isn't correct");
            int side[2] = {0, 0}, cnt[2];
            for (int s = 0; s < 2; s++) {
                if (fscanf(from_user, "%d", &cnt[s]) != 1 || cnt[s] < 0 || cnt[s] > N)
                    finish("0", "Output isn't correct");
                for (int i = 0; i < cnt[s]; i++) {
                    int x;
                    if (fscanf(from_user, "%d", &x) != 1 || x < 0 || x >= N || mark[x] == weighings)
                        finish("0", "Output isn't correct");
                    mark[x] = weighings;
                    if (x == H) side[s] = 1;
                }
            }
            if (cnt[0] != cnt[1]) finish("0", "Output isn't correct");
            fprintf(to_user, "%d\n", side[0] - side[1]);
            fflush(to_user);
        } else if (op[0] == '!') {
            int x;
            if (fscanf(from_user, "%d", &x) != 1 || x != H) finish("0", "Output isn't correct");
            if (weighings <= Q) finish("1", "Output is correct");
            finish("0.5", "Output is partially correct");
        } else {
            finish("0", "Output isn't correct");
        }
    }
}
