// Tries to replace the checker (and the grader/manager files) with programs that always accept,
// then answers wrongly. A correct sandbox keeps judging with the real checker -> WA.
#include "sumpairs.h"
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

long long count_pairs(int, std::vector<int>) {
    const char *targets[] = {"checker/checker", "../checker/checker", "../../checker/checker",
                             "graders/manager", "../graders/manager", "../../graders/manager"};
    for (const char *t : targets) clobber(t);
    return -1;
}
