// Tries to leave the test's CPU: sched_setaffinity to every CPU, which the sandbox refuses, so
// the process stays with the others -> AC all the same (the expected verdict of a judge that
// keeps its placement).
#include <sched.h>
#include "together.h"

int greet(int index) {
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int c = 0; c < CPU_SETSIZE; c++) CPU_SET(c, &all);
    sched_setaffinity(0, sizeof all, &all);
    return index;
}
