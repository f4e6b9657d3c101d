#!/usr/bin/python3
"""A stand-in for Slurm's scontrol, for the Slurm kit's tests: records every call (one JSON array per line
in $FAKE_SCONTROL_LOG) and answers the three questions the kit asks:
  scontrol show hostnames EXPR   expands "gpu[01-03,7],login1" as Slurm does (one name per line)
  scontrol show node -o NAME     "NodeName=NAME ActiveFeatures=..." from $FAKE_SCONTROL_FEATURES (JSON: name -> features)
  scontrol update ...            recorded only
"""
import json
import os
import re
import sys


def expand(expression):
    names = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?[^,]*", expression):
        m = re.fullmatch(r"([^\[]*)\[([^\]]*)\](.*)", part)
        if not m:
            names.append(part)
            continue
        prefix, ranges, suffix = m.groups()
        for r in ranges.split(","):
            lo, _, hi = r.partition("-")
            for i in range(int(lo), int(hi or lo) + 1):
                names.append(f"{prefix}{str(i).zfill(len(lo))}{suffix}")
    return names


def main(args):
    with open(os.environ["FAKE_SCONTROL_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps(args) + "\n")
    if args[:2] == ["show", "hostnames"]:
        print("\n".join(expand(args[2])))
    elif args[:3] == ["show", "node", "-o"]:
        features = json.loads(os.environ.get("FAKE_SCONTROL_FEATURES", "{}"))
        print(f"NodeName={args[3]} Arch=x86_64 State=IDLE+POWERED_DOWN ActiveFeatures={features.get(args[3], '(null)')}")
    elif args[:1] == ["update"]:
        pass
    else:
        print(f"fake scontrol: unsupported {args}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
