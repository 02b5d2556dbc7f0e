// Sends 128 MiB of spaces before its first query (the manager's scanf skips them all), then
// gives up with a wrong guess -> WA. What the judge keeps of the conversation stays bounded.
#include "guess.h"
#include <cstdio>
#include <cstring>

int play(int n) {
    static char blank[1 << 20];
    memset(blank, ' ', sizeof blank);
    for (int i = 0; i < 128; i++) fwrite(blank, 1, sizeof blank, stdout);
    ask(1);
    return n + 1;
}
