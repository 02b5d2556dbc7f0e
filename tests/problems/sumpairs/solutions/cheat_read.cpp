// Tries to read the expected output (box files, the task folder's tests). A correct sandbox
// hides them, so it falls back to a wrong answer -> WA.
#include "sumpairs.h"
#include <cstdio>
#include <glob.h>

static bool try_read(const char *path, long long &v) {
    FILE *f = fopen(path, "r");
    if (!f) return false;
    bool ok = fscanf(f, "%lld", &v) == 1;
    fclose(f);
    return ok;
}

long long count_pairs(int, std::vector<int>) {
    long long v;
    const char *paths[] = {"correct_output.txt", "../correct_output.txt", "../../correct_output.txt",
                           "/box/correct_output.txt"};
    for (const char *p : paths)
        if (try_read(p, v)) return v;
    const char *patterns[] = {"../tests/*.out", "../../tests/*.out", "tests/*.out"};
    for (const char *pat : patterns) {
        glob_t g;
        if (glob(pat, 0, nullptr, &g) == 0 && g.gl_pathc > 0 && try_read(g.gl_pathv[0], v)) {
            globfree(&g);
            return v;
        }
    }
    return -1;
}
