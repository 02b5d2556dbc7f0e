// Same numbers with messy whitespace: leading blanks, runs of spaces and tabs between entries,
// trailing blanks, CRLF line ends and trailing empty lines. White-diff accepts it -> AC.
#include <cstdio>
#include <vector>

int main() {
    int n;
    if (scanf("%d", &n) != 1) return 1;
    std::vector<int> row{1};
    for (int r = 0; r < n; r++) {
        printf("  ");
        for (size_t i = 0; i < row.size(); i++) printf(i % 2 ? "\t %d" : "   %d", row[i]);
        printf(" \t \r\n");
        std::vector<int> next{1};
        for (size_t i = 0; i + 1 < row.size(); i++) next.push_back((row[i] + row[i + 1]) % 1000);
        next.push_back(1);
        row = next;
    }
    printf("\n\n   \n\t\n");
}
