// Jumps straight to the target -> WA unless the target is a neighbour (the sample's first
// queries are not all neighbours).
#include "hops.h"

int next_hop(int, int t) { return t; }
