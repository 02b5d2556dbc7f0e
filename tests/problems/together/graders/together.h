// together: a check of the judge, not a puzzle. Each of the two user processes tells the
// manager the CPUs it may run on; the test is correct when every process of the test (the
// manager too) may run on the same single CPU (docs/judging.md#cpu-placement). greet() is
// called first and its result ignored.
int greet(int index);
