"""Compare two result files of run.sh (JSON lines) into a per-test table.

    python report.py results-ref.jsonl results-ours.jsonl [-o REPORT.txt]

Columns: test id, ref result, ours result, execute calls (how many times the test ran a .pte
in the worker; 0 means the test never reached the runtime), short failure reason for ours.
Then totals and ours-only failures grouped by reason.
"""

import argparse
import collections
import json
import re


def load(path):
    res = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                r = json.loads(line)
                # a setup error or teardown failure outranks the call result
                if r["nodeid"] not in res or r["outcome"] in ("error", "failed"):
                    res[r["nodeid"]] = r
    return res


def short(msg, limit=160):
    """The first meaningful line of a failure message."""
    for line in (msg or "").splitlines():
        line = line.strip()
        if line and not line.startswith("---"):
            return line[:limit]
    return ""


def cause(msg):
    """A grouping key: the message's first line with numbers and quoted names blurred."""
    s = short(msg, 300)
    s = re.sub(r"Failed: Timeout.*", "Failed: Timeout (pytest-timeout)", s)
    s = re.sub(r"0x[0-9a-f]+", "0x?", s)
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ref")
    ap.add_argument("ours")
    ap.add_argument("-o", "--out")
    a = ap.parse_args()
    ref, ours = load(a.ref), load(a.ours)
    ids = sorted(set(ref) | set(ours))
    w = max([len(i) for i in ids] + [10])
    lines = [f"{'test id':<{w}}  {'ref':<8} {'ours':<8} {'calls':>5}  reason (ours)"]
    for i in ids:
        r, o = ref.get(i), ours.get(i)
        ro = r["outcome"] if r else "-"
        oo = o["outcome"] if o else "-"
        calls = max((x or {}).get("et_calls", 0) for x in (r, o))
        reason = short(o["message"]) if o and oo not in ("passed",) else ""
        lines.append(f"{i:<{w}}  {ro:<8} {oo:<8} {calls:>5}  {reason}")

    def count(res):
        return collections.Counter(x["outcome"] for x in res.values())

    lines.append("")
    lines.append(f"ref : {dict(count(ref))}")
    lines.append(f"ours: {dict(count(ours))}")
    executed = [i for i in ids if max((x or {}).get("et_calls", 0) for x in (ref.get(i), ours.get(i))) > 0]
    lines.append(f"tests that executed a .pte in the worker: {len(executed)}")
    only = [i for i in ids if ref.get(i, {}).get("outcome") == "passed" and ours.get(i, {}).get("outcome") not in ("passed", None)]
    groups = collections.defaultdict(list)
    for i in only:
        groups[cause(ours[i]["message"])].append(i)
    lines.append(f"\nours-only failures (passed on ref): {len(only)}")
    for key, tests in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"\n[{len(tests)}] {key}")
        lines.extend(f"    {t}" for t in tests)
    both = [i for i in ids if ref.get(i, {}).get("outcome") in ("failed", "error") and ours.get(i, {}).get("outcome") in ("failed", "error")]
    if both:
        lines.append(f"\nfailing on both: {len(both)}")
        for t in both:
            lines.append(f"    {t}  ref: {short(ref[t]['message'], 120)}")
    ref_only = [i for i in ids if ref.get(i, {}).get("outcome") in ("failed", "error") and ours.get(i, {}).get("outcome") == "passed"]
    if ref_only:
        lines.append(f"\nfailing on ref only: {len(ref_only)}")
        for t in ref_only:
            lines.append(f"    {t}  ref: {short(ref[t]['message'], 120)}")
    text = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
