# Any two positive integers summing to n pass: python3 checker.py input expected output
import sys
n = int(open(sys.argv[1]).read().split()[0])
try:
    a, b = map(int, open(sys.argv[3]).read().split())
    print(1 if a > 0 and b > 0 and a + b == n else 0)
except ValueError:
    print(0)
