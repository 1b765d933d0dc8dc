"""`python -m tools.typecheck [MYPY OPTIONS]` (= `./dev typecheck`, and the first step of
`./dev test`): mypy on every module of the `lowprec` package, each once, under its import name.

mypy finds a module by looking for `lowprec/formats/…` on its search path; it follows neither
setuptools' package mapping (`lowprec.formats` is the folder `formats/`, setup.py) nor the import
hook of an editable install, and without the old symbolic links there is no such folder. So this
gives mypy the list itself: `tools.layout.package_modules()` names every file of the checkout's
`lowprec/` and of each layer (`lowprec.LAYERS`), and mypy checks exactly those files with the
options of pyproject.toml's [tool.mypy] (extra command-line options are passed on). Messages name
the real files (`formats/codec.py:12: error: …`); the summary and exit status are mypy's (0 clean,
1 errors, 2 a blocking error). Plain `mypy` has no target in the configuration and says so.
"""

from __future__ import annotations

import os
import sys
import time

from tools.layout import ROOT, package_modules


def main(argv: list[str] | None = None) -> int:
    from mypy import build
    from mypy.errors import CompileError
    from mypy.fscache import FileSystemCache
    from mypy.main import process_options
    from mypy.modulefinder import BuildSource
    from mypy.util import FancyFormatter, count_stats

    t0 = time.time()
    os.chdir(ROOT)  # the configuration's relative paths (cache) and the messages' file names
    fscache = FileSystemCache()
    modules = package_modules()
    # the options: pyproject.toml's [tool.mypy] and the command line; a target is required, so name
    # one file and replace the source list below with every module under its import name
    args = ["--config-file", str(ROOT / "pyproject.toml"), *(argv or []), str(modules["lowprec"])]
    _, options = process_options(args, fscache=fscache)
    sources = [BuildSource(os.path.relpath(path, ROOT), name, None) for name, path in sorted(modules.items())]
    formatter = FancyFormatter(sys.stdout, sys.stderr, options.hide_error_codes)
    blockers = False
    try:
        messages = build.build(sources, options, fscache=fscache, stdout=sys.stdout, stderr=sys.stderr).errors
    except CompileError as exc:
        messages, blockers = exc.messages, True
    for line in messages:
        print(line)
    n_errors, n_notes, n_files = count_stats(messages)
    if n_errors:
        print(formatter.format_error(n_errors, n_files, len(sources), blockers=blockers,
                                     use_color=options.color_output))
        return 2 if blockers else 1
    print(formatter.format_success(len(sources), options.color_output))
    print(f"({len(sources)} modules of lowprec, {time.time() - t0:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
