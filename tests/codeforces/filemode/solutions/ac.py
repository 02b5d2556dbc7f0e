a, b = map(int, open("input.txt").read().split())
with open("output.txt", "w") as f:
    f.write(f"{a * b}\n")
