// relay manager: manager <u0_to_m> <m_to_u0> <u1_to_m> <m_to_u1>, stdin = input.txt ("X").
// Opens all four FIFOs up front (so that every user process sees EOF when it exits), relays
// the sender's message to the receiver and checks the receiver's answer.
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
    if (argc < 5) finish("0", "Judge failure: manager needs 4 FIFO paths");
    unsigned long long X;
    if (scanf("%llu", &X) != 1) finish("0", "Judge failure: bad input");
    // Each user opens its input FIFO first, then its output FIFO: open in the same order.
    FILE *to0 = fopen(argv[2], "w");
    FILE *from0 = fopen(argv[1], "r");
    FILE *to1 = fopen(argv[4], "w");
    FILE *from1 = fopen(argv[3], "r");
    if (!to0 || !from0 || !to1 || !from1) finish("0", "Judge failure: cannot open FIFOs");

    fprintf(to0, "%llu\n", X);
    fflush(to0);
    int k;
    if (fscanf(from0, "%d", &k) != 1) finish("0", "Output isn't correct: sender sent nothing");
    if (k < 0 || k > 16) finish("0", "Output isn't correct: message too long");
    int msg[16];
    for (int i = 0; i < k; i++)
        if (fscanf(from0, "%d", &msg[i]) != 1 || msg[i] < 0 || msg[i] > 255)
            finish("0", "Output isn't correct: invalid message");
    fprintf(to1, "%d", k);
    for (int i = 0; i < k; i++) fprintf(to1, " %d", msg[i]);
    fprintf(to1, "\n");
    fflush(to1);
    unsigned long long Y;
    if (fscanf(from1, "%llu", &Y) != 1) finish("0", "Output isn't correct: receiver answered nothing");
    if (Y != X) finish("0", "Output isn't correct: wrong number");
    if (k <= 4) finish("1", "Output is correct");
    finish("0.5", "Output is partially correct: message longer than 4 bytes");
}
