// pingpong: the manager sends q numbers, one at a time; pong(x) must return (3x + 1) mod 1000003
// before the next number comes. A test is tens of thousands of one-number round trips.
int pong(int x);
