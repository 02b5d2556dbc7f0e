#include <vector>

// relay: two user processes. Process 0 (the sender) gets X in [0, 2^32) and calls encode(X),
// which returns a message of at most 16 bytes (ints in [0, 255]). The manager relays the message
// to process 1 (the receiver), which calls decode(message) and must return X.
// Full score with at most 4 bytes, half with at most 16.
std::vector<int> encode(unsigned int X);
unsigned int decode(std::vector<int> message);
