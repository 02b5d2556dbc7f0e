// pingpong stub (Communication, std_io): reads "x" and answers "pong(x)", flushing each answer,
// until the manager sends -1 or closes the pipe (then it exits quietly with status 0).
#include "pingpong.h"
#include <csignal>
#include <cstdio>

int main() {
    signal(SIGPIPE, SIG_IGN);
    int x;
    while (scanf("%d", &x) == 1 && x >= 0) {
        printf("%d\n", pong(x));
        fflush(stdout);
    }
    return 0;
}
