#!/usr/bin/env python3
"""Reads a ginkgo JSON report of the conformance suite (hack/lab/conformance.sh).

  conformance.py summary REPORT [BASELINE]      "47 passed, 0 failed, 0 skipped" (and what the
                                                baseline already failed)
  conformance.py gate REPORT [BASELINE] STATE   exit 1 naming each test that failed here and
                                                not on the baseline; on the baseline itself, each
                                                failure is a limit of the lab, named, exit 1
"""
import json
import sys


def specs(path):
    """The specs the run selected, by full name: passed, failed or skipped (at run time)."""
    with open(path) as f:
        reports = json.load(f)
    out = {}
    for r in reports:
        for s in r.get("SpecReports") or []:
            if s.get("LeafNodeType") != "It":
                # A suite node that failed (the cluster not ready for the
                # suite, say) fails the run; its specs were never run.
                if s.get("State") not in ("passed", "skipped"):
                    out["[%s]" % s.get("LeafNodeType")] = ("failed", (s.get("Failure") or {}).get("Message", ""))
                continue
            name = " ".join([t for t in s.get("ContainerHierarchyTexts") or [] if t] + [s.get("LeafNodeText", "")])
            state = s.get("State")
            if state == "skipped" and not (s.get("Failure") or {}).get("Message"):
                continue  # left out by the focus, not run
            if state in ("failed", "panicked", "timedout", "aborted", "interrupted"):
                state = "failed"
            # A test that passed on its second attempt (--flake-attempts)
            # counts as passed and is named in the summary.
            if state == "passed" and (s.get("NumAttempts") or 1) > 1:
                state = "passed-retried"
            out[name] = (state, (s.get("Failure") or {}).get("Message", ""))
    return out


def counts(sp):
    c = {"passed": 0, "failed": 0, "skipped": 0, "retried": 0}
    for st, _ in sp.values():
        if st == "passed-retried":
            c["passed"] += 1
            c["retried"] += 1
            continue
        c[st if st in c else "failed"] += 1
    return c


def main(argv):
    if len(argv) >= 2 and argv[0] == "summary":
        sp = specs(argv[1])
        c = counts(sp)
        line = "%d passed, %d failed, %d skipped" % (c["passed"], c["failed"], c["skipped"])
        if c["retried"]:
            line += " (%d passed on a second attempt: %s)" % (c["retried"], "; ".join(n for n, (st, _) in sorted(sp.items()) if st == "passed-retried"))
        if len(argv) > 2:
            base = specs(argv[2])
            known = [n for n, (st, _) in sp.items() if st == "failed" and base.get(n, ("",))[0] == "failed"]
            if known:
                line += " (%d of them failed on the baseline too)" % len(known)
        print(line)
        return 0
    if len(argv) >= 3 and argv[0] == "gate":
        sp = specs(argv[1])
        state = argv[-1]
        base = specs(argv[2]) if len(argv) == 4 else {}
        if not sp:
            print("the report holds no test")
            return 1
        bad = []
        for n, (st, msg) in sorted(sp.items()):
            if st != "failed":
                continue
            if base.get(n, ("",))[0] == "failed" and state != "baseline":
                print("failed on the baseline too (a limit of the lab): %s" % n)
                continue
            bad.append(n)
            print("FAILED: %s: %s" % (n, msg.strip().splitlines()[0] if msg.strip() else ""))
        if bad:
            print("%d test(s) failed%s, the first: %s" % (len(bad), " on the baseline (limits of the lab)" if state == "baseline" else " that passed on the baseline" if base else "", bad[0]))
            return 1
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
