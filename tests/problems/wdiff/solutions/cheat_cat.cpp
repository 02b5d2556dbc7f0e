// Prints the expected output file if it can find one (box, parent folders, task tests).
// A correct sandbox hides them: it prints nothing -> WA.
#include <cstdio>
#include <glob.h>

static bool cat(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char buf[4096];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, k, stdout);
    fclose(f);
    return true;
}

int main() {
    const char *paths[] = {"correct_output.txt", "../correct_output.txt", "../../correct_output.txt"};
    for (const char *p : paths)
        if (cat(p)) return 0;
    // Without knowing which test this is, guess the biggest expected output of the task.
    const char *patterns[] = {"../tests/*.out", "../../tests/*.out"};
    for (const char *pat : patterns) {
        glob_t g;
        if (glob(pat, 0, nullptr, &g) == 0 && g.gl_pathc > 0) {
            cat(g.gl_pathv[g.gl_pathc - 1]);
            globfree(&g);
            return 0;
        }
    }
    return 0;
}
