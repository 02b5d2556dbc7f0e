n = int(input())
s = sum(map(int, input().split()))
# Lower case, extra blank lines and spaces: the comparison normalises them.
print(f"  {s}\n\n{'yes' if s % 2 == 0 else 'no'}  ")
