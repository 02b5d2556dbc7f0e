#!/usr/bin/env python3
"""Builds ../submissions.jsonl from solutions/<problem>/*.cpp and the model-like prose below.

Each submission looks like a row of a real model-output dataset (docs/data.md#submissions):
`generation` is prose followed by a fenced ```cpp block (sometimes two, the last one being the
answer), `code` is "" (the code is then extracted from `generation`) except for a few rows.
"""
import json, os, uuid

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "submissions.jsonl")

PROMPTS = {
    "orchard": (
        "You are an expert competitive programmer. Solve the following IOI 2025 problem in C++17.\n\n"
        "# Orchard\n\nThere are N trees in a row; tree i carries A[i] apples. Choose a cut k "
        "(1 <= k <= N-1) so that the left part A[0..k-1] and the right part A[k..N-1] hold as "
        "equal amounts of apples as possible.\n\nImplement\n\n"
        "    std::vector<long long> split_orchard(std::vector<int> A)\n\n"
        "returning {D, k}: D, the minimum of |left - right|, and a cut k achieving it. If D is "
        "correct but k is not, you get 50% of the points of the test.\n\n"
        "Constraints: 2 <= N <= 200000, 1 <= A[i] <= 10^9.\n\n"
        "Subtasks: 1 (20 points) N <= 100, A[i] <= 1000. 2 (30 points) N <= 5000, A[i] <= 100000. "
        "3 (50 points) no additional constraints.\n\n"
        "Include \"orchard.h\" and do not write a main function. Put your final solution in a "
        "single ```cpp code block."
    ),
    "skyline": (
        "You are an expert competitive programmer. Solve the following IOI 2025 practice problem in C++17.\n\n"
        "# Skyline\n\nN buildings stand in a row from west to east with heights H[0..N-1]. For every "
        "building, find the nearest building to its east that is strictly taller.\n\nImplement\n\n"
        "    std::vector<int> next_taller(std::vector<int> H)\n\n"
        "returning, for every i, that building's index (0-based), or -1 if there is none.\n\n"
        "Constraints: 1 <= N <= 200000, 1 <= H[i] <= 10^9.\n\n"
        "Subtasks: 1 (15 points) H is strictly increasing. 2 (35 points) all heights are distinct, "
        "N <= 2000. 3 (50 points) no additional constraints.\n\n"
        "Include \"skyline.h\" and do not write a main function. Put your final solution in a "
        "single ```cpp code block."
    ),
    "scales": (
        "You are an expert competitive programmer. Solve the following IOI 2025 interactive problem in C++17.\n\n"
        "# Scales\n\nThere are N coins numbered 0..N-1; exactly one of them is heavier than the "
        "others. You may call\n\n    int weigh(std::vector<int> left, std::vector<int> right)\n\n"
        "with the same number of distinct coins on both pans; it returns 1 if the left pan is "
        "heavier, -1 if the right pan is heavier and 0 if they balance. Implement\n\n"
        "    int find_heavy(int N)\n\nreturning the heavy coin.\n\n"
        "Subtasks: 1 (20 points) N <= 10, at most N-1 weighings. 2 (30 points) N <= 1000, at most "
        "ceil(log2 N) weighings. 3 (50 points) N <= 100000: full score with at most ceil(log3 N) "
        "weighings, 50% with at most ceil(log2 N).\n\n"
        "Include \"scales.h\" and do not write a main function. Put your final solution in a "
        "single ```cpp code block."
    ),
}


def src(problem, name):
    with open(os.path.join(HERE, "solutions", problem, name + ".cpp")) as f:
        return f.read()


def block(code, lang="cpp"):
    return f"```{lang}\n{code}```"


# (problem, key, target subtask, usage key, tokens, fill code?, generation parts)
# A generation part is prose (str) or ("cpp", solution name) / (lang, literal text).
S = []

# ---------------------------------------------------------------- orchard
S += [
    ("orchard", "ac", "03-full", "output_tokens", 6113, False, [
        "Let me think about this problem.\n\nWe need a cut k minimizing |L - R| where L is the sum of "
        "the first k trees. A brute force tries every k and sums both sides:",
        ("cpp", "ac_brute"),
        "That is O(N^2), which is fine for subtask 1 but far too slow for N = 200000.\n\n"
        "Better: with total T and running prefix L, the difference is |2L - T|. One pass over the "
        "cuts with a running prefix sum gives O(N). The sums reach 2 * 10^14, so everything must "
        "be `long long`.\n\nFinal solution:",
        ("cpp", "ac"),
        "This runs in O(N) time and O(1) extra memory.",
    ]),
    ("orchard", "overflow", "02-medium", "output_tokens", 2870, False, [
        "We precompute prefix sums pre[i] and for each cut k compute |2*pre[k] - total|, keeping the "
        "smallest. Prefix sums make each cut O(1), so the whole thing is O(N).",
        ("cpp", "overflow"),
    ]),
    ("orchard", "firstcross", "03-full", "completion_tokens", 4021, False, [
        "Observation: as k grows, the left sum grows and the right sum shrinks, so L - R is "
        "monotonic. The optimum is where the sign changes, i.e. the first k where L >= R. We can "
        "stop the scan there.",
        ("cpp", "firstcross"),
        "Complexity: O(N) in the worst case, and often much less because we stop early.",
    ]),
    ("orchard", "offbyone", "03-full", "output_tokens", 3350, True, [
        "Prefix sums, then scan all cuts. We return the minimum difference and the position of the "
        "cut, which is the index of the last tree of the left part.",
        ("cpp", "offbyone"),
    ]),
    ("orchard", "bsearch_tle", "03-full", "output_tokens", 5288, False, [
        "Since 2*pre[k] - total is strictly increasing in k, we can binary search for the last k "
        "where it is negative; the answer is that k or k+1. This is O(log N) after the prefix sums.",
        ("cpp", "bsearch_tle"),
    ]),
    ("orchard", "mle", "03-full", "output_tokens", 7731, False, [
        "To answer any range sum in O(1) I'll build a sparse table over the apples for all "
        "positions and levels (MAXN x LOG, with some padding per level for alignment), then "
        "evaluate every cut.",
        ("cpp", "mle"),
    ]),
    ("orchard", "ce", "01-small", "completion_tokens", 1544, False, [
        "Straightforward: total with accumulate, then a running prefix sum over the cuts.",
        ("cpp", "ce"),
    ]),
    ("orchard", "nocode", "03-full", "output_tokens", 16384, False, [
        "Okay, so the problem is to split the orchard. Let me first consider the case N = 2: the only "
        "cut is k = 1 and D = |A[0] - A[1]|. For N = 3 there are two cuts... Hmm, wait. Let me "
        "reconsider whether the difference is convex in k. L(k) increases, R(k) decreases, so "
        "L - R increases, and |L - R| decreases then increases. So it is unimodal, and we could "
        "ternary search. But with equal values there could be plateaus, which break ternary "
        "search. Let me think again about plateaus: A[i] >= 1, so L - R strictly increases by "
        "2*A[k] at each step, so there are no plateaus in L - R, but |L - R| could have two equal "
        "minima around zero. Then ternary search still works if we compare carefully. Let me "
        "write down the comparison: if f(m1) < f(m2) then the optimum is in [lo, m2]... actually "
        "it is easier to binary search for the sign change. Alternatively just scan. But then "
        "what about",
    ]),
    ("orchard", "re", "03-full", "output_tokens", 4476, False, [
        "Prefix sums give every cut in O(1). To be safe on ties I prefer the cut where the average "
        "apples per tree on both sides are equal.",
        ("cpp", "re"),
    ]),
]

# ---------------------------------------------------------------- skyline
S += [
    ("skyline", "ac", "03-full", "output_tokens", 2260, False, [
        "Classic next-greater-element. Scan from east to west with a stack of indices whose "
        "heights are strictly decreasing from bottom to top: pop every building that is not "
        "taller than the current one (it can never be an answer for anything further west), "
        "then the top of the stack is the answer.",
        ("cpp", "ac"),
        "Each index is pushed and popped at most once: O(N).",
    ]),
    ("skyline", "strict_pop", "02-distinct", "completion_tokens", 1830, False, [
        "Brute force first, scanning east from each building:",
        ("cpp", "brute"),
        "That is O(N^2), too slow for subtask 3. Use a monotonic stack instead: pop the smaller "
        "buildings, the top is the next taller one.",
        ("cpp", "strict_pop"),
    ]),
    ("skyline", "one_based", "03-full", "output_tokens", 2012, False, [
        "Monotonic stack from the right. Note that the answer should be the building number.",
        ("cpp", "one_based"),
    ]),
    ("skyline", "noadvance_tle", "03-full", "output_tokens", 2675, False, [
        "Process buildings from east to west keeping a stack of candidates; buildings not taller "
        "than the current one are removed for good. Amortized O(N).",
        ("cpp", "noadvance_tle"),
    ]),
    ("skyline", "mle", "03-full", "output_tokens", 5980, False, [
        "Idea: keep, for each height value, the nearest index seen so far with a larger height. "
        "Heights go up to 1e9, so hash them into 2^28 buckets. As a fallback, a stack pass fixes "
        "the answers.",
        ("cpp", "mle"),
    ]),
    ("skyline", "ce", "03-full", "completion_tokens", 1403, True, [
        "Standard monotonic stack, O(N).",
        ("cpp", "ce"),
    ]),
    ("skyline", "nocode", "03-full", "output_tokens", 1290, False, [
        "This is the next greater element problem. Here is the algorithm in Python for clarity:",
        ("python", "def next_taller(H):\n    ans, st = [-1] * len(H), []\n"
                   "    for i in range(len(H) - 1, -1, -1):\n"
                   "        while st and H[st[-1]] <= H[i]:\n            st.pop()\n"
                   "        ans[i] = st[-1] if st else -1\n        st.append(i)\n    return ans\n"),
        "Translating it to C++ is direct: use a std::vector<int> as the stack.",
    ]),
    ("skyline", "at_re", "03-full", "output_tokens", 3105, False, [
        "Use the answers already computed to jump: from i+1, while the building is not taller, "
        "jump to its own next taller building. Each jump skips a whole block, so this is "
        "amortized linear.",
        ("cpp", "at_re"),
    ]),
]

# ---------------------------------------------------------------- scales
S += [
    ("scales", "ac", "03-full", "output_tokens", 4890, False, [
        "Each weighing has three outcomes, so with q weighings we can distinguish at most 3^q "
        "coins: ceil(log3 N) is optimal. Split the candidates into three groups of sizes a, a and "
        "k - 2a with a = ceil(k/3); weigh the first two: the heavier pan holds the coin, and if "
        "they balance it is in the third group.",
        ("cpp", "ac"),
    ]),
    ("scales", "binary", "02-medium", "output_tokens", 3977, False, [
        "Halving: put half of the candidates on each pan. My first attempt:",
        ("cpp", "binary_draft"),
        "Wait, when the range has odd length the pans get different numbers of coins, which is "
        "not allowed. Fix: put floor(len/2) coins on each pan and leave one out; if the pans "
        "balance, the coin left out is the heavy one.",
        ("cpp", "binary"),
        "This uses at most ceil(log2 N) weighings.",
    ]),
    ("scales", "linear", "01-small", "completion_tokens", 980, True, [
        "For small N we can simply compare coin 0 against every other coin; the first unbalanced "
        "weighing tells us the answer.",
        ("cpp", "linear"),
    ]),
    ("scales", "sign_wa", "03-full", "output_tokens", 4410, False, [
        "Ternary splitting gives ceil(log3 N) weighings. Careful with the direction of the result.",
        ("cpp", "sign_wa"),
    ]),
    ("scales", "count_tle", "03-full", "output_tokens", 5123, False, [
        "First compute how many weighings we need, ceil(log3 N), then do exactly that many "
        "ternary splits.",
        ("cpp", "count_tle"),
    ]),
    ("scales", "mle", "03-full", "completion_tokens", 8862, False, [
        "Let dp[k] be the minimum number of weighings for k coins; dp[k] = dp[ceil(k/3)] + 1. "
        "Precompute it for all k, then pick at each step the smallest split that keeps the "
        "optimal count.",
        ("cpp", "mle"),
    ]),
    ("scales", "ce", "03-full", "output_tokens", 2745, False, [
        "Ternary search over the coins.",
        ("cpp", "ce"),
    ]),
    ("scales", "nocode", "03-full", "output_tokens", 2301, False, [
        "Ternary splitting: three groups, weigh two of them. Code:",
        ("", "int find_heavy(int N) {\n    std::vector<int> c(N);\n"
             "    for (int i = 0; i < N; i++) c[i] = i;\n    while (c.size() > 1) {\n"
             "        int a = (c.size() + 2) / 3;\n        std::vector<int> L(c.begin(), c.begin() + a), "
             "R(c.begin() + a, c.begin() + 2 * a), rest(c.begin() + 2 * a, c.end());\n"
             "        int r = weigh(L, R);\n        c = r == 1 ? L : r == -1 ? R : rest;\n    }\n"
             "    return c[0];\n}\n"),
        "It tries a third of the coins per pan, so it needs ceil(log3 N) weighings.",
    ]),
    ("scales", "segv", "03-full", "output_tokens", 3890, False, [
        "Keep the candidates compacted at the front of a global array and split in three each "
        "time.",
        ("cpp", "segv"),
    ]),
]


def main():
    rows = []
    ns = uuid.UUID("6d1c5f1e-2025-4a10-9e00-000000000000")
    for problem, key, target, usage_key, tokens, fill_code, parts in S:
        text, last_code = [], None
        for p in parts:
            if isinstance(p, str):
                if p:
                    text.append(p)
            else:
                lang, what = p
                code = src(problem, what) if lang == "cpp" else what
                if lang == "cpp":
                    last_code = code
                text.append(block(code, lang))
        generation = "\n\n".join(text) + "\n"
        rows.append({
            "uuid": str(uuid.uuid5(ns, f"{problem}/{key}")),
            # A readable name shown next to the uuid in reports and the summary.
            "label": f"{problem}/{key}",
            "problem_id": problem,
            "year": 2025,
            "subtask": target,
            "prompt": PROMPTS[problem],
            "generation": generation,
            "code": last_code if fill_code else "",
            "metadata": {"usage": {usage_key: tokens}},
        })
    with open(OUT, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print(f"{len(rows)} submissions -> {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()
