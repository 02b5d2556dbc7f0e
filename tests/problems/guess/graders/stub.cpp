// guess stub (Communication, std_io): talks to the manager on stdin/stdout.
// Protocol: manager -> "n"; user -> "? x" (manager -> "-1"/"0"/"1") ... then "! s".
// When the manager closes the pipe (EOF), the stub exits quietly with status 0.
#include "guess.h"
#include <csignal>
#include <cstdio>
#include <cstdlib>

int ask(int x) {
    printf("? %d\n", x);
    fflush(stdout);
    int r;
    if (scanf("%d", &r) != 1) exit(0);
    return r;
}

int main() {
    signal(SIGPIPE, SIG_IGN);
    int n;
    if (scanf("%d", &n) != 1) return 0;
    int s = play(n);
    printf("! %d\n", s);
    fflush(stdout);
    return 0;
}
