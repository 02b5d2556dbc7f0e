// tpsguess manager: stdin "N X"; talks to the user; prints on stdout what the checker judges
// (an output secret, a status, then "answer queries"), like IOI 2022's managers with checkers.
#include <csignal>
#include <cstdio>
#include <cstdlib>

static void finish(const char *status, int answer, int queries) {
    printf("tpsguess-output-secret\n%s\n%d %d\n", status, answer, queries);
    fflush(stdout);
    std::_Exit(0);
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    if (argc < 3) return 3;
    int n, x;
    if (scanf("%d %d", &n, &x) != 2) return 3;
    FILE *to_user = fopen(argv[2], "a");
    FILE *from_user = fopen(argv[1], "r");
    if (!to_user || !from_user) return 3;
    fprintf(to_user, "%d\n", n);
    fflush(to_user);
    int queries = 0;
    char op[4];
    int y;
    for (;;) {
        if (fscanf(from_user, "%3s %d", op, &y) != 2) finish("PV", 0, queries);
        if (op[0] == '!') finish("OK", y, queries);
        if (op[0] != '?' || ++queries > 100) finish("PV", 0, queries);
        fprintf(to_user, "%d\n", x < y ? -1 : x == y ? 0 : 1);
        fflush(to_user);
    }
}
