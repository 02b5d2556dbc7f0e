// The right output, then 96 MiB of whitespace (accepted by white-diff in principle): stopped
// by the output limit (twice the expected output plus 64 MiB), so the judge never reads it.
#include <cstdio>
#include <cstring>
#include <vector>

int main() {
    int n;
    if (scanf("%d", &n) != 1) return 1;
    std::vector<int> row{1};
    for (int r = 0; r < n; r++) {
        for (size_t i = 0; i < row.size(); i++) printf(i ? " %d" : "%d", row[i]);
        printf("\n");
        std::vector<int> next{1};
        for (size_t i = 0; i + 1 < row.size(); i++) next.push_back((row[i] + row[i + 1]) % 1000);
        next.push_back(1);
        row = next;
    }
    static char blank[1 << 20];
    memset(blank, ' ', sizeof blank);
    blank[sizeof blank - 1] = '\n';
    for (int i = 0; i < 96; i++) fwrite(blank, 1, sizeof blank, stdout);
}
