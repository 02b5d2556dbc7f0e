// wdiff: no grader. The submission has its own main(): it reads n from stdin and prints the
// first n rows of Pascal's triangle, every entry taken modulo 1000, one row per line, entries
// separated by spaces. Outputs are compared with white-diff (no checker).
