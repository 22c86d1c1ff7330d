"""The README's ladder table, generated from the ladders themselves.

    python tools/readme_ladders.py           print the table
    python tools/readme_ladders.py --write   rewrite it in README.md

Names and steps come from ``cuatomic.methods``; summaries from the cuda
tables (a CUDA build has them without a GPU), else the cpu ones.
tests/test_readme.py fails when README.md and the tables differ.
"""
import pathlib
import sys

import cuatomic
from cuatomic import _backend

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
HEADER = "| op | step | method | what it does |\n|---|---|---|---|\n"


def table():
    source = "cuda" if _backend.cuda_built() else "cpu"
    rows = [f"| {op} | {step} | `{name}` | {summary} |"
            for op in _backend.OPS for name, step, summary in cuatomic.methods(op, source)]
    return HEADER + "\n".join(rows) + "\n"


def main(argv):
    new = table()
    if "--write" not in argv:
        sys.stdout.write(new)
        return 0
    text = README.read_text()
    start = text.index(HEADER)
    end = text.index("\n\n", start) + 1
    README.write_text(text[:start] + new + text[end:])
    print(f"README.md: ladder table rewritten ({new.count(chr(10)) - 2} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
