// tpsguess checker: the manager's output against the model solution's; 20 queries for full
// marks, up to 100 for half.
#include "testlib.h"

int main(int argc, char **argv) {
    registerChecker("tpsguess", argc, argv);
    inf.readInt();
    int x = inf.readInt();
    if (ouf.readWord() != "tpsguess-output-secret") quitf(_wa, "secret mismatch");
    std::string status = ouf.readWord();
    if (status != "OK") quitf(_wa, "protocol violation or too many queries");
    ans.readWord();
    if (ans.readWord() != "OK") quitf(_fail, "the model solution failed");
    if (ans.readInt() != x) quitf(_fail, "the model solution is wrong");
    int got = ouf.readInt(), queries = ouf.readInt();
    if (got != x) quitf(_wa, "expected %d, found %d", x, got);
    if (queries > 20) quitp(0.5, "%d queries", queries);
    quitf(_ok, "%d queries", queries);
}
