// A tiny testlib-compatible header, written for these fixtures (the subset they use):
// generators (registerGen, rnd.next), validators (registerValidation, strict reads, ensuref)
// and checkers (registerChecker, inf/ans/ouf, quitf/quitp) with the CMS convention: the score
// on stdout, the verdict on stderr.
#pragma once
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cctype>
#include <cstring>
#include <string>

enum TResult { _ok, _wa, _fail, _points };

[[noreturn]] inline void quit_with(double score, const char *verdict, const std::string &msg) {
    printf("%g\n", score);
    fprintf(stderr, "%s\n", verdict);
    if (!msg.empty()) fprintf(stderr, "%s\n", msg.c_str());
    exit(0);
}

inline std::string testlib_format(const char *fmt, va_list ap) {
    char buf[4096];
    vsnprintf(buf, sizeof buf, fmt, ap);
    return buf;
}

[[noreturn]] inline void quitf(TResult r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::string msg = testlib_format(fmt, ap);
    va_end(ap);
    if (r == _ok) quit_with(1, "Output is correct", msg);
    if (r == _fail) {
        fprintf(stderr, "Judge Failure; Contact staff!\n%s\n", msg.c_str());
        exit(3);
    }
    quit_with(0, "Output isn't correct", msg);
}

[[noreturn]] inline void quitp(double points, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::string msg = testlib_format(fmt, ap);
    va_end(ap);
    quit_with(points, "Output is partially correct", msg);
}

// A stream of whitespace-separated tokens; a reading error on the contestant's output is a
// wrong answer, on the judge's files a judge failure.
// A validator reads strictly: no whitespace is skipped, each one is read explicitly.
struct InStream {
    FILE *f = nullptr;
    TResult on_error = _fail;
    bool strict = false;
    std::string token() {
        std::string s;
        int c = fgetc(f);
        if (!strict)
            while (c != EOF && isspace(c)) c = fgetc(f);
        while (c != EOF && !isspace(c)) { s += (char)c; c = fgetc(f); }
        if (c != EOF) ungetc(c, f);
        if (s.empty()) quitf(on_error, "expected a token");
        return s;
    }
    void expect(int want, const char *what) {
        if (fgetc(f) != want) quitf(on_error, "expected %s", what);
    }
    void readSpace() { expect(' ', "a space"); }
    void readEoln() { expect('\n', "an end of line"); }
    void readEof() { expect(EOF, "the end of the file"); }
    std::string readLine() {
        std::string s;
        int c;
        while ((c = fgetc(f)) != EOF && c != '\n') s += (char)c;
        if (c == EOF) quitf(on_error, "expected an end of line");
        return s;
    }
    long long readLong(long long lo, long long hi, const char *name) {
        long long v = readLong();
        if (v < lo || v > hi) quitf(on_error, "%s = %lld is outside [%lld, %lld]", name, v, lo, hi);
        return v;
    }
    int readInt(int lo, int hi, const char *name) { return (int)readLong(lo, hi, name); }
    long long readLong() {
        std::string s = token();
        char *end;
        long long v = strtoll(s.c_str(), &end, 10);
        if (*end) quitf(on_error, "expected an integer, found \"%s\"", s.c_str());
        return v;
    }
    int readInt() { return (int)readLong(); }
    std::string readWord() { return token(); }
    bool seekEof() {
        int c;
        while ((c = fgetc(f)) != EOF && isspace(c)) {}
        if (c == EOF) return true;
        ungetc(c, f);
        return false;
    }
};

inline InStream inf, ouf, ans;

inline void registerValidation() {
    inf.f = stdin;
    inf.strict = true;
}

#define ensuref(cond, ...) \
    do { \
        if (!(cond)) quitf(_fail, __VA_ARGS__); \
    } while (0)

inline void registerChecker(const char *, int argc, char **argv) {
    if (argc < 4) quitf(_fail, "usage: checker input answer output");
    inf.f = fopen(argv[1], "r");
    ans.f = fopen(argv[2], "r");
    ouf.f = fopen(argv[3], "r");
    if (!inf.f || !ans.f || !ouf.f) quitf(_fail, "cannot open the files");
    ouf.on_error = _wa;
}

// Deterministic random numbers seeded by the generator's arguments, as testlib's are.
struct Random {
    uint64_t state = 88172645463325252ull;
    uint64_t next64() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return state;
    }
    long long next(long long lo, long long hi) {
        return lo + (long long)(next64() % (uint64_t)(hi - lo + 1));
    }
    int next(int lo, int hi) { return (int)next((long long)lo, (long long)hi); }
};

inline Random rnd;

inline void registerGen(int argc, char **argv, int) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 1; i < argc; i++)
        for (const char *p = argv[i]; ; p++) {
            h = (h ^ (unsigned char)*p) * 1099511628211ull;
            if (!*p) break;
        }
    rnd.state = h | 1;
}
