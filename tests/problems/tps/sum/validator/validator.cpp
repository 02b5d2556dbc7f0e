// tpssum validator: `validator SUBTASK` < input (the secret line, then n and the numbers).
#include "testlib.h"
#include <cstring>

int main(int argc, char **argv) {
    registerValidation();
    ensuref(argc == 2, "usage: validator SUBTASK");
    bool full = strcmp(argv[1], "full") == 0;
    ensuref(inf.readLine() == "tpssum-input-secret", "secret not found");
    int n = inf.readInt(1, full ? 200000 : 1000, "n");
    inf.readEoln();
    long long limit = full ? 1000000000 : 1000000;
    for (int i = 0; i < n; i++) {
        inf.readLong(-limit, limit, "a_i");
        if (i + 1 < n) inf.readSpace();
    }
    inf.readEoln();
    inf.readEof();
}
