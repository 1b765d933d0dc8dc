"""`./dev records`: compute the installed course's lesson records and write them beside the lessons
(`lessons_cmd.SHIPPED_RECORDS`, content/lesson-records.json), so that the first
`lowprec lessons --json` after a bare `pip install` reads them instead of computing (issue 33).

Run it after changing a lesson or a module the course's answers import: a record whose inputs
changed is never served (it is computed instead), and tests/test_lessons_cmd.py's
`test_the_shipped_records_are_current` fails until the file is written again. About a minute on
two cores (each lesson in its own process, two at a time).
"""

from __future__ import annotations

import argparse
import sys
import time

from lowprec.app.commands import lessons_cmd


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./dev records", description=__doc__.split("\n\n")[0])
    parser.add_argument("-j", "--jobs", type=int, default=2, help="lessons computed at once (default: 2)")
    args = parser.parse_args(argv)
    if not 1 <= args.jobs <= 16:
        parser.error(f"--jobs {args.jobs}: give 1 to 16")
    start = time.perf_counter()
    entries = lessons_cmd.write_shipped_records(jobs=args.jobs, say=lambda line: print(line, file=sys.stderr))
    print(f"{lessons_cmd.SHIPPED_RECORDS}: {len(entries)} lesson records "
          f"({time.perf_counter() - start:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
