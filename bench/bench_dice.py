"""The dice: what the decision rule does, as a table (not a test).

    python bench/bench_dice.py              # exact, every look; then the sampler, simulated
    python bench/bench_dice.py --trials 20000 --seed 7

For each base rate x head rate x base history length:
- `exact`: the rule at every look (one head attempt at a time), computed exactly over every base
  count and every path of head attempts (`sequential.error_rates`);
- `sampled`: the sampler a live run uses at `--jobs 4` (`pipeline/sampling.sample`: two
  attempts, then batches as large as the rule says deciding would take, at most 4), simulated
  with seeded coins.
Columns: mean head runs, P(blamed), P(holds), P(not shown). Rows where head = base are A/A:
P(blamed) is the false-red rate the rule holds at most 5%.
"""

from __future__ import annotations

import argparse
import random
import time

from aam_eval_action.pipeline.sampling import Plan, sample
from aam_eval_action.sequential import Counts, Rule, error_rates

BASES = (0.5, 0.7, 0.9, 1.0)
HISTORIES = (4, 10, 20)
DROPS = {0.5: (0.5, 0.2), 0.7: (0.7, 0.4), 0.9: (0.9, 0.7, 0.6, 0.3), 1.0: (1.0, 0.7)}


def simulated(base: float, head: float, n_before: int, trials: int, rng: random.Random) -> tuple[float, ...]:
    counts = {"regressed": 0, "holds": 0, "not-shown": 0}
    runs = 0
    for _ in range(trials):
        before = Counts(sum(rng.random() < base for _ in range(n_before)), n_before)
        done = sample(Plan(before, Counts(0, 0), False, Rule(), at_once=4),
                      lambda n: ["PASS" if rng.random() < head else "FAIL" for _ in range(n)], lambda: None)
        counts[done.evidence.decision] += 1
        runs += len(done.verdicts)
    return runs / trials, counts["regressed"] / trials, counts["holds"] / trials, counts["not-shown"] / trials


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=65)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    rule = Rule()
    print(f"rule: confidence {rule.confidence}, tolerance {rule.tolerance}, cap {rule.cap} runs; "
          f"sampled: {args.trials} trials, seed {args.seed}")
    print("| base | head | history | exact: runs | P(blamed) | P(holds) | P(not shown) "
          "| sampled: runs | P(blamed) | P(holds) | P(not shown) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    start = time.monotonic()
    for base in BASES:
        for head in DROPS[base]:
            for n in HISTORIES:
                e = error_rates(base, head, n, rule)
                s = simulated(base, head, n, args.trials, rng)
                print(f"| {base:.1f} | {head:.1f} | {n} | {e.mean_runs:.2f} | {e.blamed:.3f} | {e.holds:.3f} "
                      f"| {e.not_shown:.3f} | {s[0]:.2f} | {s[1]:.3f} | {s[2]:.3f} | {s[3]:.3f} |",
                      flush=True)
    print(f"({time.monotonic() - start:.0f} s)")


if __name__ == "__main__":
    main()
