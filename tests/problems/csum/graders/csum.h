// csum: the sum of n integers. A header C and C++ both read, as CMS tasks offering C had.
#ifdef __cplusplus
extern "C" {
#endif
long long sum_all(int n, const int *a);
#ifdef __cplusplus
}
#endif
