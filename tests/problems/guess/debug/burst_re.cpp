// Sends queries without reading the answers, with SIGPIPE's default action: the manager quits
// after 100 ("too many queries") and the next query kills the program -> RE (SIGPIPE), relayed
// or not.
#include "guess.h"
#include <csignal>
#include <cstdio>

int play(int n) {
    signal(SIGPIPE, SIG_DFL);
    for (int i = 0; i < 100000; i++) {
        printf("? 1\n");
        fflush(stdout);
    }
    return 1;
}
