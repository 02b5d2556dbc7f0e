#include "tpsguess.h"
int find_number(int n) {
    volatile int *p = nullptr;
    return *p + n;
}
