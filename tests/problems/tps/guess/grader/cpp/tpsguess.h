// Returns -1 when X < y, 0 when X == y, 1 when X > y.
int ask(int y);
int find_number(int n);
