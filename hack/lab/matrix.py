#!/usr/bin/env python3
"""Reads the lab's matrix (hack/lab/matrix.json) for the shell scripts.

  matrix.py ci                  the names of the cells CI runs, one per line
  matrix.py shell CELL          the cell as shell assignments (CELL_CPS, ...)
  matrix.py scenario CELL NAME  the scenario as shell assignments (SC_CA, SC_DRIVER, SC_FAULT,
                                SC_DOWN, SC_RECOVERY, SC_APPLY_TIMEOUT, SC_ROLLBACK_AFTER, SC_RESTART_TIMEOUT,
                                SC_CONFORMANCE: the states after which the conformance suite runs)
  matrix.py faults CELL         the names of the cell's scenarios with a fault
  matrix.py cells-with-faults   the cells that have one, one per line
  matrix.py table               every cell and its scenarios, as a Markdown table
"""
import json
import os
import shlex
import sys

CAS = {"old", "new"}
DRIVERS = {"runbook", "ansible"}
# The faults of the runbook's section "When something goes wrong"
# (runbook.json's fault IDs) the lab can make happen, and the drivers it
# makes each happen under.
FAULTS = {"worker-down": {"runbook"}, "apply-killed": {"runbook"}, "disk-full": {"runbook"}, "deadline": {"runbook"}, "apply-failed": {"ansible"}, "restart-stuck": {"runbook"}}


def load():
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "matrix.json")) as f:
        m = json.load(f)
    for c in m["cells"]:
        for s in c["scenarios"]:
            if s["ca"] not in CAS or s["driver"] not in DRIVERS:
                sys.exit("matrix.json: cell %s scenario %s: ca must be one of %s, driver one of %s" % (c["name"], s["name"], sorted(CAS), sorted(DRIVERS)))
            f = s.get("fault")
            if f is not None and s["driver"] not in FAULTS.get(f, ()):
                sys.exit("matrix.json: cell %s scenario %s: the lab makes fault %r happen under %s only (faults: %s)" % (
                    c["name"], s["name"], f, ", ".join(sorted(FAULTS.get(f, ()))) or "no driver", ", ".join(sorted(FAULTS))))
            if f == "deadline" and not s.get("window", {}).get("rollbackAfter"):
                sys.exit("matrix.json: cell %s scenario %s: fault deadline needs window.rollbackAfter" % (c["name"], s["name"]))
            if f == "restart-stuck" and not s.get("window", {}).get("restartTimeout"):
                sys.exit("matrix.json: cell %s scenario %s: fault restart-stuck needs window.restartTimeout" % (c["name"], s["name"]))
            # down: the workers that are off through the window (fault
            # worker-down, beside the scenario's own fault).
            down = s.get("down", [])
            if down and (s["driver"] not in FAULTS["worker-down"] or f in ("restart-stuck", "deadline", "apply-failed")):
                sys.exit("matrix.json: cell %s scenario %s: down (fault worker-down) goes with driver %s, and with no fault that ends in the old cluster or cuts a worker off" % (
                    c["name"], s["name"], ", ".join(sorted(FAULTS["worker-down"]))))
            # recovery: the control plane is lost (every control-plane node's
            # /etc/kubernetes) and rebuilt from the surviving member's
            # database, with a new CA, the ranges kept; a rollback would
            # bring the lost state back, so it is the cell's last scenario.
            if s.get("recovery") and (s["ca"] != "new" or s["driver"] != "runbook" or f or down or s is not c["scenarios"][-1]):
                sys.exit("matrix.json: cell %s scenario %s: recovery is a new-CA runbook scenario without fault or down, the cell's last" % (c["name"], s["name"]))
            # conformance: the states of the scenario after which Kubernetes'
            # conformance suite runs (issue 49): migrated, rolled-back.
            conf = s.get("conformance", [])
            if any(x not in ("migrated", "rolled-back") for x in conf) or (conf and (s.get("recovery") or f in ("deadline", "apply-failed"))):
                sys.exit("matrix.json: cell %s scenario %s: conformance lists states among migrated and rolled-back, of a scenario that migrates" % (c["name"], s["name"]))
            for n in down:
                if n not in c["workers"] or n == c["workers"][0]:
                    sys.exit("matrix.json: cell %s scenario %s: down %s is not one of the cell's workers after the first (the first runs the probe)" % (c["name"], s["name"], n))
    return m


def cell(m, name):
    for c in m["cells"]:
        if c["name"] == name:
            return c
    sys.exit("matrix.json has no cell %r (it has %s)" % (name, ", ".join(c["name"] for c in m["cells"])))


def main(argv):
    m = load()
    if argv[:1] == ["ci"]:
        for c in m["cells"]:
            if c.get("ci"):
                print(c["name"])
    elif argv[:1] == ["shell"] and len(argv) == 2:
        c = cell(m, argv[1])
        for k, v in (("CELL_CPS", " ".join(c["controlPlanes"])), ("CELL_WORKERS", " ".join(c["workers"])),
                     ("CELL_CNI", c["cni"]), ("CELL_INSTALLER", c["installer"]), ("CELL_K8S", c["kubernetes"]),
                     ("CELL_SCENARIOS", " ".join(s["name"] for s in c["scenarios"]))):
            print("%s=%s" % (k, shlex.quote(v)))
    elif argv[:1] == ["scenario"] and len(argv) == 3:
        c = cell(m, argv[1])
        for s in c["scenarios"]:
            if s["name"] == argv[2]:
                w = s.get("window", {})
                print("SC_CONFORMANCE=%s" % shlex.quote(" ".join(s.get("conformance", []))))
                print("SC_CA=%s SC_DRIVER=%s SC_FAULT=%s SC_DOWN=%s SC_RECOVERY=%s SC_APPLY_TIMEOUT=%s SC_ROLLBACK_AFTER=%s SC_RESTART_TIMEOUT=%s" % (
                    shlex.quote(s["ca"]), shlex.quote(s["driver"]), shlex.quote(s.get("fault", "")), shlex.quote(" ".join(s.get("down", []))),
                    "1" if s.get("recovery") else "''",
                    shlex.quote(w.get("applyTimeout", "")), shlex.quote(w.get("rollbackAfter", "")),
                    shlex.quote(w.get("restartTimeout", ""))))
                return
        sys.exit("cell %s has no scenario %r (it has %s)" % (c["name"], argv[2], ", ".join(s["name"] for s in c["scenarios"])))
    elif argv[:1] == ["cells-with-faults"]:
        for c in m["cells"]:
            if any(s.get("fault") or s.get("down") or s.get("recovery") for s in c["scenarios"]):
                print(c["name"])
    elif argv[:1] == ["faults"] and len(argv) == 2:
        print(" ".join(s["name"] for s in cell(m, argv[1])["scenarios"] if s.get("fault") or s.get("down") or s.get("recovery")))
    elif argv[:1] == ["table"]:
        print("| cell | control plane | workers | CNI | installer | Kubernetes | CI | scenarios (each: migrate, check, roll back, check) |")
        print("|---|---|---|---|---|---|---|---|")
        for c in m["cells"]:
            sc = ", ".join("`%s` (%s CA, %s%s%s)" % (s["name"], s["ca"], s["driver"], ", fault `%s`" % s["fault"] if s.get("fault") else "",
                                                  (", fault `worker-down` (%s off)" % " ".join(s["down"]) if s.get("down") else "") +
                                                  (", recovery (the control plane lost; no rollback)" if s.get("recovery") else "") +
                                                  (", conformance suite when %s" % " and ".join(s["conformance"]) if s.get("conformance") else ""))
                           for s in c["scenarios"])
            print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (c["name"], " ".join(c["controlPlanes"]), " ".join(c["workers"]),
                                                             c["cni"], c["installer"], c["kubernetes"], "yes" if c.get("ci") else "no", sc))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
