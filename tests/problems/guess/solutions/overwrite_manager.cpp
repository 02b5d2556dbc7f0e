// Tries to replace the manager and the checker with programs that always accept (which would
// affect later tests), then answers wrongly. A correct sandbox -> WA everywhere.
#include "guess.h"
#include <cstdio>
#include <sys/stat.h>
#include <unistd.h>

static void clobber(const char *path) {
    unlink(path);
    FILE *f = fopen(path, "w");
    if (!f) return;
    fputs("#!/bin/sh\necho 1\necho 'Output is correct' >&2\n", f);
    fclose(f);
    chmod(path, 0755);
}

int play(int) {
    const char *targets[] = {"graders/manager", "../graders/manager", "../../graders/manager",
                             "checker/checker", "../checker/checker"};
    for (const char *t : targets) clobber(t);
    return -5;
}
