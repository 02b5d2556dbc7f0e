// tpssum checker: the grader's secret, its status, then the sum.
#include "testlib.h"

int main(int argc, char **argv) {
    registerChecker("tpssum", argc, argv);
    if (ouf.readWord() != "tpssum-output-secret") quitf(_wa, "secret mismatch: possible tampering");
    std::string status = ouf.readWord();
    if (status != "OK") quitf(_wa, "grader status %s", status.c_str());
    ans.readWord();
    ans.readWord();
    long long want = ans.readLong(), got = ouf.readLong();
    if (want != got) quitf(_wa, "expected %lld, found %lld", want, got);
    quitf(_ok, "sum %lld", got);
}
