// Not run by ioi-run (the tests are the generators' output); kept as TPS expects one.
#include "testlib.h"
int main() { return 0; }
