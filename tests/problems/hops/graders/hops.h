// hops (modelled on IOI 2020 stations): stations 0..n-1 on a line, each next to the stations
// one lower and one higher. next_hop(s, t) gets a packet at station s bound for station t != s
// and returns the neighbour of s it goes to. The manager asks one query at a time.
int next_hop(int s, int t);
