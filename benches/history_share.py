#!/usr/bin/env python3
"""benches/history_share.py - how full a review's history gets, on real changes.

How the default of `prune_threshold` was chosen. For the last 25 commits that touch
code in each git repository given (e.g. clones of ../shared/eval-repos/*.bundle),
the history at the end of a thorough 10-step ReAct review is estimated as:
  3,000 tokens of system prompt and tool schemas
  + the shaped first message (`redline context --format json`, real tokens)
  + one `read_file` result (400 numbered lines, at most 6,000 tokens) per changed
    file, and results of the same average size up to 12 reads (callers, tests).
Read sizes are counted in bytes and converted with the commit's own ratio of real
tokens to bytes (`tokens.naive` of `redline context` over the bytes of its files
and diff). Prints the distribution and its share of common windows.

Usage: benches/history_share.py REDLINE_BINARY REPO...
"""
import json
import statistics
import subprocess
import sys

FIXED = 3_000
READS = 12
WINDOWS = [("128k (gpt-4o)", 128_000, 16_384), ("200k (claude)", 200_000, 64_000),
           ("32k (local)", 32_768, 4_096)]


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True).stdout


def history(redline, repo, commit):
    files = [f for f in git(repo, "diff", "--name-only", "--diff-filter=AMR",
                            f"{commit}^", commit).split() if f.endswith((".rs", ".py"))]
    if not files:
        return None
    ctx = subprocess.run([redline, "context", "--repo", repo, "--base", f"{commit}^",
                          "--head", commit, "--model", "gpt-4o", "--format", "json"],
                         capture_output=True, text=True)
    if ctx.returncode != 0:
        return None
    tokens = json.loads(ctx.stdout)["tokens"]
    heads = [git(repo, "show", f"{commit}:{f}") for f in files]
    diff = git(repo, "diff", f"{commit}^", commit)
    ratio = tokens["naive"] / max(1, sum(map(len, heads)) + len(diff))
    reads = [min(6_000, int(ratio * sum(len(l) + 7 for l in h.splitlines()[:400])))
             for h in heads]
    reads += [int(statistics.mean(reads))] * max(0, READS - len(reads))
    return FIXED + tokens["shaped"] + sum(reads[:40])


def main():
    redline, repos = sys.argv[1], sys.argv[2:]
    totals = []
    for repo in repos:
        commits = git(repo, "log", "--no-merges", "--format=%H", "-n", "400", "--",
                      "*.rs", "*.py").split()
        found = 0
        for commit in commits:
            if found == 25:
                break
            total = history(redline, repo, commit)
            if total is not None:
                totals.append(total)
                found += 1
    totals.sort()
    at = lambda p: totals[min(len(totals) - 1, int(p * len(totals)))]
    print(f"{len(totals)} changes: median {at(0.5)}, p90 {at(0.9)}, max {totals[-1]} tokens")
    for name, window, output in WINDOWS:
        usable = window - output
        print(f"{name}: median {at(0.5) / usable:.2f}, p90 {at(0.9) / usable:.2f}, "
              f"max {totals[-1] / usable:.2f} of the usable window")


if __name__ == "__main__":
    main()
