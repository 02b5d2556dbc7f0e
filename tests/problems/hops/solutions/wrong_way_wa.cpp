// Always one step up -> WA at the first packet bound for a lower station.
#include "hops.h"

int next_hop(int s, int) { return s + 1; }
