"""`lowprec lessons [SLUG ...] [--answers] [--json] [--root DIR] [--no-cache]`: the course, lesson by
lesson, with what it asks.

Per lesson: slug, title, order, summary, goal, its objectives (each part of the goal with the
exercises and predictions that check it), and its predictions and exercises. The plain form is
the course's table of contents — one line per lesson with its goal, then each prediction's and
exercise's id and answer kind (and the widget a prediction unlocks) — and computes nothing: it
parses the lesson files. `--answers` adds each computed answer to those lines; `--json` prints every
lesson as strict JSON (`lowprec.strictjson`) with the predictions (id, question, answer kind, the
computed answer as `Answer.to_dict()`, the widget it unlocks) and exercises (id, prompt, answer
kind, answer, hints, worked solution), each with `context`: the last `CONTEXT_CHARS` characters of
lesson text a reader has seen when the answer box appears (the Markdown before it, earlier
questions, prompts and explanations, and its own question), so a script can check every answer and
that no answer is given away. `--root` reads another
lesson folder (a draft course); slugs select lessons, and an unknown slug is an error that lists
the known ones. A lesson that does not parse or whose answer cannot be computed is an error naming
its file and line.

Answers are computed by the worked examples (`course.examples`), some of which train tiny
torch models: seconds of work. The records are kept in a cache (`CACHE_ENV`, else
`$XDG_CACHE_HOME/lowprec/lessons`, else `~/.cache/lowprec/lessons`; `--no-cache` or an empty
`LOWPREC_CACHE_DIR` turns it off), one file per lesson, under a key that is the SHA-256 of the
lesson file's bytes, of every Python source file of the imported lowprec package and of the
Python, numpy, ml_dtypes, numba and torch installs (their path, size and modification time). Any
change to any of them is a miss: the record is computed again, never reused stale. A lesson found in
the cache is listed without importing `lowprec.course.lessons` (and the widget records, numpy,
ml_dtypes … it brings); an unreadable or unwritable cache is ignored.

The installed course also ships its records (`SHIPPED_RECORDS`, package data beside the lessons,
written by `./dev records`), so the first `lowprec lessons --json` after a bare `pip install`
computes nothing. Each shipped record names what its computation read: the lesson file, the files
of every lowprec module its process had imported (`ShippedRecords` hashes those files, wherever the
package is installed) and the versions of the numerical libraries it imported (`DEPENDENCIES`). It
is used only when every one of them is the same here, else the lesson is computed (and cached) as
above: a shipped record is never served stale. One exception: an optional dependency
(`OPTIONAL_DEPENDENCIES`: torch) that is not installed here. The lessons about torch's
checkpointing cannot be computed without it, and their shipped records state what that torch
version does, so they are listed; another torch version is a miss. `--no-cache` skips the shipped
records too.

Pure Python: the lesson parser and the worked examples (numpy, `lowprec.formats`,
`lowprec.simulations`); no Panel, Bokeh or (unless an answer needs it) torch.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

from lowprec import strictjson
from lowprec.course.lesson_files import DEFAULT_ROOT, lesson_paths, slug_of

#: the environment variable that names the cache folder ("" turns the cache off)
CACHE_ENV = "LOWPREC_CACHE_DIR"
#: a record's layout; bump it when lesson_record's output changes shape
RECORD_VERSION = 2
#: how much lesson text before an answer box a record keeps as its `context`
CONTEXT_CHARS = 400
#: installs whose change may change an answer (found, never imported, for the key; their
#: distribution names, for a shipped record's versions)
DEPENDENCIES = ("numpy", "ml_dtypes", "numba", "torch")
#: optional installs: a shipped record computed with one is served where it is not installed (it
#: cannot be computed here, and what it says is that version's behaviour); another version is a miss
OPTIONAL_DEPENDENCIES = ("torch",)
#: the installed course's computed records (`write_shipped_records`; `./dev records`)
SHIPPED_RECORDS = DEFAULT_ROOT.parent / "lesson-records.json"


def register(sub: Any) -> None:
    p = sub.add_parser("lessons")
    p.add_argument("slugs", nargs="*", metavar="SLUG", help="only these lessons (default: all)")
    p.add_argument("--answers", action="store_true",
                   help="also print each prediction's and exercise's computed answer")
    p.add_argument("--json", action="store_true",
                   help="print every lesson's goal, predictions and exercises with their computed answers")
    p.add_argument("--root", metavar="DIR", default=None,
                   help="lesson folder to read (default: the lessons installed with lowprec)")
    p.add_argument("--no-cache", dest="cache", action="store_false",
                   help=f"compute every record again and leave the cache alone (default: cache in "
                        f"${CACHE_ENV} or ~/.cache/lowprec)")
    p.set_defaults(func=run)


# ------------------------------------------------------------------------------------------------
# records
# ------------------------------------------------------------------------------------------------


def lesson_record(lesson: Any, answers: bool = True) -> dict[str, Any]:
    """One lesson as JSON-ready data. With `answers`, every prediction and exercise with its texts
    and computed answer (the lesson's Markdown and explanations are not rendered: their numbers are
    not needed); without, the outline: ids, answer kinds and the widget each prediction unlocks."""
    from lowprec.course.lessons import (
        ExerciseBlock,
        ExplanationBlock,
        LabBlock,
        MarkdownBlock,
        PredictionBlock,
        RawBlock,
        WidgetDirective,
        interactive_blocks,
        render_blocks,
    )

    predictions: list[dict[str, Any]] = []
    exercises: list[dict[str, Any]] = []
    waiting: dict[str, Any] | None = None  # the last prediction, until a widget follows it
    blocks = render_blocks(lesson) if answers else interactive_blocks(lesson)
    seen = ""  # the lesson text a reader has seen so far (answers: the rendered blocks)
    for block in blocks:
        if isinstance(block, MarkdownBlock):
            seen += block.text + "\n"
        elif isinstance(block, ExplanationBlock):
            seen += block.text + "\n"
        elif isinstance(block, (WidgetDirective, LabBlock)):
            if waiting is not None:
                waiting["unlocks"] = block.name if isinstance(block, WidgetDirective) else f"lab {block.name}"
                waiting = None
        elif isinstance(block, RawBlock):  # the outline: as written, nothing computed
            if block.kind == "explain":
                continue
            entry = {"id": block.id, "kind": block.fields["kind"][0].split()[0]}
            if block.kind == "predict":
                waiting = {**entry, "unlocks": None}
                predictions.append(waiting)
            else:
                exercises.append(entry)
        elif isinstance(block, PredictionBlock):
            seen += block.question + "\n"
            waiting = {"id": block.id, "question": block.question, "kind": block.answer.kind,
                       "answer": block.answer.to_dict(), "options": _options(block.answer), "unlocks": None,
                       "context": seen[-CONTEXT_CHARS:]}
            predictions.append(waiting)
        elif isinstance(block, ExerciseBlock):
            seen += block.prompt + "\n"
            exercises.append({"id": block.id, "prompt": block.prompt, "kind": block.answer.kind,
                              "answer": block.answer.to_dict(), "options": _options(block.answer),
                              "hints": list(block.hints), "solution": block.solution,
                              "context": seen[-CONTEXT_CHARS:]})
    objectives = [{"text": o.text, "checked_by": list(o.checked_by)} for o in lesson.objectives]
    return {"slug": lesson.slug, "title": lesson.title, "order": lesson.order, "summary": lesson.summary,
            "goal": lesson.goal, "objectives": objectives, "predictions": predictions, "exercises": exercises}


def _options(answer: Any) -> int | None:
    """How many answers a learner can give (choices, orders, classifications); None for a number
    or a code."""
    n: int = answer.options
    return n if answer.kind in ("choice", "order", "classify") else None


# ------------------------------------------------------------------------------------------------
# the cache
# ------------------------------------------------------------------------------------------------


def cache_dir() -> Path | None:
    """The cache folder (see the module docstring), None when turned off."""
    configured = os.environ.get(CACHE_ENV)
    if configured is not None:
        return Path(configured) / "lessons" if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "lowprec" / "lessons"


def _package_sources() -> list[Path]:
    """Every Python source of the imported lowprec package: its own modules and each layer's
    (`lowprec.LAYERS`: folders inside the installed package, the top-level folders of a checkout)."""
    import lowprec

    own = Path(lowprec.__file__).resolve().parent
    out = sorted(own.glob("*.py"))
    for name in lowprec.LAYERS:
        spec = importlib.util.find_spec(f"lowprec.{name}")  # imports lowprec only, not the layer
        for root in (spec.submodule_search_locations or []) if spec is not None else []:
            for folder, dirs, files in os.walk(root):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
                out.extend(Path(folder) / f for f in sorted(files) if f.endswith(".py"))
    return out


def source_key() -> bytes:
    """SHA-256 of everything besides a lesson's own file that a record depends on: the record
    layout, every lowprec source file's bytes, the interpreter and the dependencies' installs."""
    h = hashlib.sha256(f"lowprec lessons record v{RECORD_VERSION}\n{sys.version}\n".encode())
    for path in _package_sources():
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for name in DEPENDENCIES:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        if origin:
            st = os.stat(origin)
            h.update(f"{name} {origin} {st.st_size} {st.st_mtime_ns}\n".encode())
        else:
            h.update(f"{name} absent\n".encode())
    return h.digest()


def course_key(paths: list[Path]) -> bytes:
    """SHA-256 of every lesson's file name and `order:` line: a lesson's text quotes other lessons'
    numbers (`{{ lesson:SLUG }}`), so a reordering changes every record."""
    h = hashlib.sha256()
    for path in paths:
        head = path.read_bytes()[:4096]
        orders = [line for line in head.splitlines() if line.startswith(b"order:")]
        h.update(path.name.encode() + b"\0" + b"".join(orders[:1]) + b"\n")
    return h.digest()


class RecordCache:
    """Lesson records by key, one JSON file per (lesson folder, slug) in `folder`."""

    def __init__(self, folder: Path | None, lesson_folder: Path, course: bytes = b"") -> None:
        self.folder = folder
        self._prefix = hashlib.sha256(str(lesson_folder.resolve()).encode()).hexdigest()[:16]
        self._source: bytes | None = None
        self._course = course

    def key(self, path: Path, text: bytes) -> str:
        if self._source is None:
            self._source = source_key()
        return hashlib.sha256(self._source + self._course + path.name.encode() + b"\0" + text).hexdigest()

    def _file(self, path: Path) -> Path:
        assert self.folder is not None
        return self.folder / f"{self._prefix}-{slug_of(path)}.json"

    def get(self, path: Path, key: str, answers: bool) -> dict[str, Any] | None:
        """The cached record under `key` (one with answers satisfies a request without), or None."""
        if self.folder is None:
            return None
        try:
            entry = strictjson.loads(self._file(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or entry.get("key") != key or (answers and not entry.get("answers")):
            return None
        record = entry.get("record")
        return record if isinstance(record, dict) else None

    def put(self, path: Path, key: str, answers: bool, record: dict[str, Any]) -> None:
        if self.folder is None:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=self.folder, suffix=".tmp",
                                             delete=False) as fh:
                fh.write(strictjson.dumps({"key": key, "answers": answers, "record": record}, indent=None))
            os.replace(fh.name, self._file(path))  # atomic: a reader sees the old file or the new one
        except OSError:
            try:
                os.unlink(fh.name)
            except (OSError, UnboundLocalError):
                pass


# ------------------------------------------------------------------------------------------------
# the shipped records
# ------------------------------------------------------------------------------------------------


def _is_installed_course(folder: Path) -> bool:
    try:
        return folder.resolve() == DEFAULT_ROOT.resolve()
    except OSError:
        return False


def _layer_roots() -> dict[str, Path]:
    """Where each module of the package lives: "" for lowprec's own modules, each layer's folder
    (the installed package's subfolder or the checkout's top-level folder)."""
    import lowprec

    roots = {"": Path(lowprec.__file__).resolve().parent}
    for name in lowprec.LAYERS:
        spec = importlib.util.find_spec(f"lowprec.{name}")  # imports lowprec only, not the layer
        for location in (spec.submodule_search_locations or []) if spec is not None else []:
            roots.setdefault(name, Path(location).resolve())
    return roots


def module_files(names: list[str]) -> dict[str, str]:
    """Each lowprec module's file as `LAYER/RELATIVE PATH` ("./strictjson.py" for lowprec's own):
    the same name in a checkout and in an installed wheel. Modules without a file of lowprec's
    (namespace folders, aliases whose module lives elsewhere are found under their own name) are
    left out."""
    roots = _layer_roots()
    out: dict[str, str] = {}
    for name in names:
        module = sys.modules.get(name)
        file = getattr(module, "__file__", None)
        if not file:
            continue
        path = Path(file).resolve()
        for layer, root in roots.items():
            if layer and path.is_relative_to(root):
                out[name] = f"{layer}/{path.relative_to(root).as_posix()}"
                break
        else:
            if path.is_relative_to(roots[""]):
                out[name] = f"./{path.relative_to(roots['']).as_posix()}"
    return out


def installed_version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def shipped_key(lesson_name: str, text: bytes, course: bytes, digests: list[tuple[str, str]]) -> str:
    """SHA-256 of a shipped record's inputs: the layout version, the course's order, the lesson
    file's name and bytes, and `(module file, SHA-256 of its bytes)` for every module it read."""
    h = hashlib.sha256(f"lowprec shipped lesson record v{RECORD_VERSION}\n".encode() + course)
    h.update(lesson_name.encode() + b"\0" + text + b"\0")
    for file, digest in sorted(digests):
        h.update(f"{file} {digest}\n".encode())
    return h.hexdigest()


class ShippedRecords:
    """The records shipped with the course (`SHIPPED_RECORDS`): `get` returns a lesson's record
    only when its key (`shipped_key`, over the module files as they are here) and every dependency
    version it names match; a missing, unreadable or malformed file is no record at all."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: dict[str, Any] | None = None
        self._roots: dict[str, Path] | None = None
        self._digests: dict[str, str | None] = {}
        self._versions: dict[str, str | None] = {}

    def entries(self) -> dict[str, Any]:
        if self._entries is None:
            try:
                data = strictjson.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = None
            ok = isinstance(data, dict) and data.get("version") == RECORD_VERSION
            records = data.get("records") if ok and isinstance(data, dict) else None
            self._entries = records if isinstance(records, dict) else {}
        return self._entries

    def digest(self, file: str) -> str | None:
        """SHA-256 of `LAYER/PATH` here; None when there is no such file."""
        if file not in self._digests:
            if self._roots is None:
                self._roots = _layer_roots()
            layer, _, rel = file.partition("/")
            root = self._roots.get("" if layer == "." else layer)
            try:
                self._digests[file] = None if root is None else hashlib.sha256((root / rel).read_bytes()).hexdigest()
            except OSError:
                self._digests[file] = None
        return self._digests[file]

    def _version(self, distribution: str) -> str | None:
        if distribution not in self._versions:
            self._versions[distribution] = installed_version(distribution)
        return self._versions[distribution]

    def entry_is_current(self, entry: Any, path: Path, text: bytes, course: bytes, *,
                         versions: bool = True) -> bool:
        """Whether `entry` was computed from these inputs (with `versions`, the dependencies' too)."""
        if not isinstance(entry, dict) or not isinstance(entry.get("modules"), list):
            return False
        digests = []
        for file in entry["modules"]:
            digest = self.digest(file) if isinstance(file, str) else None
            if digest is None:
                return False
            digests.append((file, digest))
        if entry.get("key") != shipped_key(path.name, text, course, digests):
            return False
        deps = entry.get("dependencies")
        if not isinstance(deps, dict):
            return False
        return not versions or all(self._version(name) == version or (
            self._version(name) is None and name in OPTIONAL_DEPENDENCIES) for name, version in deps.items())

    def get(self, path: Path, text: bytes, course: bytes) -> dict[str, Any] | None:
        entry = self.entries().get(slug_of(path))
        if not isinstance(entry, dict) or not self.entry_is_current(entry, path, text, course):
            return None
        record = entry.get("record")
        return record if isinstance(record, dict) else None


def _shipped_entry(path: Path) -> dict[str, Any]:
    """In a fresh process (`write_shipped_records` runs one per lesson): the installed course's
    record for the lesson file `path` with what its computation read (see `ShippedRecords`)."""
    from lowprec.course.lessons import load_lessons

    lessons = {str(lesson.path): lesson for lesson in load_lessons(DEFAULT_ROOT)}
    record = json.loads(strictjson.dumps(lesson_record(lessons[str(path)], True), indent=None))
    names = sorted(name for name in sys.modules if name == "lowprec" or name.startswith("lowprec."))
    files = sorted(set(module_files(names).values()))
    reader = ShippedRecords(SHIPPED_RECORDS)  # finds each file as a later reader will
    digests = []
    for file in files:
        digest = reader.digest(file)
        if digest is None:
            raise ValueError(f"{file}: imported by the lesson's computation but not found in the package")
        digests.append((file, digest))
    text = path.read_bytes()
    deps = {name: installed_version(name) for name in DEPENDENCIES if name in sys.modules}
    return {"key": shipped_key(path.name, text, course_key(lesson_paths(DEFAULT_ROOT)), digests),
            "modules": files, "dependencies": deps, "record": record}


def shipped_entry_in_fresh_process(path: Path) -> dict[str, Any]:
    """`_shipped_entry(path)` computed in a new interpreter (the record cache off), so that the
    modules it lists are the ones this lesson's computation imported; ValueError naming the lesson
    if it fails."""
    import subprocess

    code = ("import sys\nfrom pathlib import Path\nfrom lowprec import strictjson\n"
            "from lowprec.app.commands.lessons_cmd import _shipped_entry\n"
            "sys.stdout.write(strictjson.dumps(_shipped_entry(Path(sys.argv[1])), indent=None))\n")
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                       env={**os.environ, CACHE_ENV: ""}, check=False)
    if r.returncode != 0:
        raise ValueError(f"{path}: computing its record failed:\n{r.stderr.strip()}")
    entry: dict[str, Any] = strictjson.loads(r.stdout)
    return entry


def write_shipped_records(out: Path = SHIPPED_RECORDS, jobs: int = 2,
                          say: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """Compute every installed lesson's record, each in its own process (so that the modules it
    imported are its own), and write them to `out` (strict JSON, one line per lesson)."""
    from concurrent.futures import ThreadPoolExecutor

    paths = lesson_paths(DEFAULT_ROOT, installed=True)

    def one(path: Path) -> tuple[str, Any]:
        entry = shipped_entry_in_fresh_process(path)
        say(f"{slug_of(path)}: {len(entry['modules'])} modules")
        return slug_of(path), entry

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        entries = dict(pool.map(one, paths))
    lines = ",\n".join(f"{strictjson.dumps(slug, indent=None).rstrip()}: "
                       f"{strictjson.dumps(entries[slug], indent=None).rstrip()}" for slug in sorted(entries))
    out.write_text(f'{{"version": {RECORD_VERSION}, "records": {{\n{lines}\n}}}}\n', encoding="utf-8")
    return entries


def course_records(root: Path | None, answers: bool, use_cache: bool = True) -> list[dict[str, Any]]:
    """Every lesson's record (`lesson_record`), in course order: from the cache when every lesson
    is there under its current key, else parsed (the whole folder: order and slug clashes are
    checked across it) and computed where missing."""
    folder = Path(root) if root is not None else DEFAULT_ROOT
    paths = lesson_paths(folder, installed=root is None)  # a missing or empty folder: one clear line
    course = course_key(paths)
    cache = RecordCache(cache_dir() if use_cache else None, folder, course)
    shipped = ShippedRecords(SHIPPED_RECORDS) if use_cache and _is_installed_course(folder) else None
    keys: dict[str, str] = {}
    found: dict[str, dict[str, Any]] = {}
    for path in paths:
        text = path.read_bytes()
        record = None
        if cache.folder is not None:
            keys[str(path)] = key = cache.key(path, text)
            record = cache.get(path, key, answers)
        if record is None and shipped is not None:
            record = shipped.get(path, text, course)  # a shipped record has answers: serves both
        if record is not None:
            found[str(path)] = record
    records = list(found.values())
    if len(found) == len(paths) and _distinct(records):
        return sorted(records, key=lambda r: r["order"])
    from contextlib import nullcontext

    from lowprec.course.lessons import load_lessons, outline_only

    out = []
    # the outline lists ids and widget names: parsed without the widgets' config records (numpy,
    # ml_dtypes, the simulations), a cold listing stays well under a second (issue 33)
    with nullcontext() if answers else outline_only():
        lessons = load_lessons(folder)
    for lesson in lessons:
        name = str(lesson.path)
        record = found.get(name)
        if record is None:
            # the cached record is strict JSON; a fresh one is made the same (non-finite numbers as
            # text), so both read alike
            with nullcontext() if answers else outline_only():
                record = json.loads(strictjson.dumps(lesson_record(lesson, answers), indent=None))
            if name in keys:
                cache.put(Path(name), keys[name], answers, record)
        out.append(record)
    return out


def missing_records(root: Path | None = None) -> int:
    """How many lessons of `root` (default: the installed course) have no record with answers in
    the cache under their current key; 0 when the cache is turned off. Hashes the sources and
    reads the cache files, computes nothing (a few tens of milliseconds)."""
    folder = Path(root) if root is not None else DEFAULT_ROOT
    paths = lesson_paths(folder, installed=root is None)
    course = course_key(paths)
    cache = RecordCache(cache_dir(), folder, course)
    if cache.folder is None:
        return 0
    shipped = ShippedRecords(SHIPPED_RECORDS) if _is_installed_course(folder) else None
    missing = 0
    for path in paths:
        text = path.read_bytes()
        if cache.get(path, cache.key(path, text), True) is None and (
                shipped is None or shipped.get(path, text, course) is None):
            missing += 1
    return missing


def _distinct(records: list[dict[str, Any]]) -> bool:
    orders = [r.get("order") for r in records]
    slugs = [r.get("slug") for r in records]
    return len(set(orders)) == len(orders) and len(set(slugs)) == len(slugs)


# ------------------------------------------------------------------------------------------------
# the command
# ------------------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    answers = bool(args.json or args.answers)
    records = course_records(Path(args.root) if args.root else None, answers, use_cache=args.cache)
    if args.slugs:
        known = {r["slug"]: r for r in records}
        unknown = [s for s in args.slugs if s not in known]
        if unknown:
            raise ValueError(f"unknown lesson {unknown[0]!r}; lessons: {', '.join(known)}")
        records = [known[s] for s in args.slugs]
    if args.json:
        strictjson.write(records, None)
        return 0
    for r in records:
        asks = [f"{len(r['predictions'])} prediction{'s' * (len(r['predictions']) != 1)}",
                f"{len(r['exercises'])} exercise{'s' * (len(r['exercises']) != 1)}"]
        print(f"{r['order']:>3}  {r['slug']}  {r['title']} — {', '.join(asks)}")
        print(f"     goal: {r['goal']}")
        for o in r.get("objectives", []):
            print(f"       - {o['text']} [{', '.join(o['checked_by'])}]")
        for p in r["predictions"]:
            shown = f": {p['answer']['text']}" if answers else ""
            print(f"     predict {p['id']} ({p['kind']}){shown}"
                  + (f" → unlocks {p['unlocks']}" if p["unlocks"] else ""))
        for e in r["exercises"]:
            shown = f": {e['answer'].get('hex', e['answer']['text'])}" if answers else ""
            print(f"     exercise {e['id']} ({e['kind']}){shown}")
    return 0
