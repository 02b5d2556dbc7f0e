// Both user processes exit (status 0) from a global constructor, before the stub's main opens
// the FIFOs: the manager, blocked opening them, must still reach its verdict at once (WA: the
// sender sent nothing), not wait for its wall limit or fail the judge.
#include "relay.h"
#include <cstdlib>

static int quit_early = (std::exit(0), 0);

std::vector<int> encode(unsigned int) { return {}; }

unsigned int decode(std::vector<int>) { return 0; }
