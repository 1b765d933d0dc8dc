"""Output plumbing of the simulation entry points: text written to a path or to stdout ("-"), JSON
through the one writer (`lowprec.strictjson`: strict RFC 8259, non-finite floats spelled "nan",
"inf", "-inf"; None means "absent"), and the one-line error report (`prog: error: message`, exit
status 2) used for bad arguments. No simulation maths lives here; the generated command-line faces
live in `simulations.framework.cli`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Any

from lowprec import strictjson

STDOUT = strictjson.STDOUT


def write_text(text: str, path: str | None) -> None:
    """Write `text` to `path` (UTF-8, newlines as given), or to stdout when `path` is None or "-"."""
    if path is None or path == STDOUT:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)


def write_json(data: Any, path: str | None, indent: int | None = 1) -> None:
    """Strict JSON of `data` to `path`, or to stdout when `path` is None or "-"."""
    strictjson.write(data, path, indent)


def check_output_path(path: str | None, option: str) -> None:
    """Refuse, before any work, an output path that cannot be written: ValueError naming `option`.

    None and "-" (stdout) pass. Otherwise the path must not be a directory, its folder must exist
    (it is not created: a typo in a folder name should not scatter files) and be writable, and an
    existing file must be writable (it is replaced)."""
    if path is None or path == STDOUT:
        return
    if not isinstance(path, str) or not path.strip():
        raise ValueError(f"{option}: expected a file path or - for stdout, got {path!r}")
    target = os.path.abspath(path)
    if os.path.isdir(target):
        raise ValueError(f"{option}: {path!r} is a directory; give a file path inside it")
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise ValueError(f"{option}: the folder of {path!r} does not exist ({folder}); create it first")
    try:  # try it (permission bits do not tell root's story, nor a read-only or virtual file system)
        if os.path.exists(target):
            with open(target, "ab"):
                pass
        else:
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".lowprec-probe-"):
                pass
    except OSError as exc:
        raise ValueError(f"{option}: {path!r} is not writable ({exc.strerror or exc})") from None


# the one bad-input report of every command line (a leaf module, shared with the `lowprec` command)
from lowprec.commandline import ArgumentParser, error_exit, parser_error  # noqa: E402,F401
