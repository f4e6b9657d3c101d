#!/usr/bin/env python3
"""Checks that no JSON Switchyard writes can throw on the bytes in it (issue "No request can stop yardd", N1).

nlohmann::json's dump() with its default error handler throws type_error.316 on a string that is not UTF-8;
one such byte in a request target once ended yardd. Every dump() outside tests must pass
error_handler_t::replace (invalid bytes become U+FFFD). Exits 1 listing each call that does not.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
FOLDERS = ["composer", "bmc", "net", "cli", "inventory", "fabric", "agent"]
CALL = re.compile(r"(\.|->)dump\(")


def main():
    bad = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in (".cpp", ".h") or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for match in CALL.finditer(text):
                # The call's arguments: up to the parenthesis that closes it.
                depth, end = 0, match.end() - 1
                for end in range(match.end() - 1, len(text)):
                    depth += {"(": 1, ")": -1}.get(text[end], 0)
                    if depth == 0:
                        break
                if "error_handler_t::replace" not in text[match.end():end]:
                    line = text.count("\n", 0, match.start()) + 1
                    bad.append(f"{path.relative_to(ROOT)}:{line}: dump() without error_handler_t::replace can throw on invalid UTF-8")
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
