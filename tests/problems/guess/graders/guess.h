// guess: find a secret integer S in [1, n].
// ask(x) returns 0 if x == S, 1 if S > x, -1 if S < x.
// play(n) must return S. At most ceil(log2(n + 1)) calls to ask for full score,
// at most 100 for 40% of the score, more is wrong.
int ask(int x);
int play(int n);
