// Scales stub (Communication, std_io): talks to the manager on stdin/stdout.
// Protocol: manager -> "N"; user -> "? k l_1 .. l_k m r_1 .. r_m" (manager -> "1"/"0"/"-1")
// ... then "! x". When the manager closes the pipe, the stub exits quietly with status 0.
#include "scales.h"
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <vector>

int weigh(std::vector<int> left, std::vector<int> right) {
    printf("? %d", (int)left.size());
    for (int x : left) printf(" %d", x);
    printf(" %d", (int)right.size());
    for (int x : right) printf(" %d", x);
    printf("\n");
    fflush(stdout);
    int r;
    if (scanf("%d", &r) != 1) exit(0);
    return r;
}

int main() {
    signal(SIGPIPE, SIG_IGN);
    int N;
    if (scanf("%d", &N) != 1) return 0;
    int x = find_heavy(N);
    printf("! %d\n", x);
    fflush(stdout);
    return 0;
}
