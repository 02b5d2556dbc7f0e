# Prints gen/data, as IOI 2022 packages do (TPS runs `python3 data.py > data`).
def gen(n, maxv):
    print(f"gen {n} {maxv}")

print("@testset random-small")
for n in (5, 10, 20):
    gen(n, 1000)

print("@subtask samples")
print("manual sample-1.in")

print("@subtask small")
print("@include samples random-small")
gen(1000, 1000000)

print("@subtask full")
print("@include small")
gen(100000, 1000000000)
gen(200000, 1000000000)
