"""Where the lessons are: the lesson folder, its files and their slugs (the standard library only).

`lowprec.app.lessons` parses these files; `lowprec lessons` lists a course from its cache without
parsing (so without importing the widgets' records and what they import) when nothing changed,
and both find the files here, one way:

- `DEFAULT_ROOT`: the lessons shipped with the package (package data of `lowprec.content`:
  `lowprec/content/lessons/*.md` in the wheel, the checkout's `content/lessons/`). lowprec is
  installed unzipped, so the resource is a real folder.
- `check_lesson_folder(folder)`: a LessonFolderError (a ValueError) unless it is an existing
  folder — "does not exist" for a missing path, "is not a folder" for a file; for the installed
  lessons the message adds that the install looks broken.
- `lesson_paths(folder)`: its `*.md` files in name order; `slug_of(path)`: the file name without its
  `NN-` order prefix and extension (`01-arithmetic-contract.md` → `arithmetic-contract`).
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

__all__ = ["DEFAULT_ROOT", "LessonFolderError", "check_lesson_folder", "lesson_paths", "slug_of"]

DEFAULT_ROOT = Path(str(resources.files("lowprec.content").joinpath("lessons")))
_SLUG_PREFIX_RE = re.compile(r"^\d+-")


class LessonFolderError(ValueError):
    """A lesson folder that is missing, not a folder, or holds no lesson."""


def _hint(folder: Path, installed: bool | None) -> str:
    return " (a broken install?)" if (folder == DEFAULT_ROOT if installed is None else installed) else ""


def check_lesson_folder(folder: Path, *, installed: bool | None = None) -> None:
    """Raise LessonFolderError unless `folder` exists and is a folder (see the module docstring);
    `installed` (default: whether it is DEFAULT_ROOT) adds the broken-install hint."""
    if not folder.exists():
        raise LessonFolderError(f"{folder}: lesson folder does not exist{_hint(folder, installed)}")
    if not folder.is_dir():
        raise LessonFolderError(f"{folder}: is not a folder; give the folder that holds the lesson files "
                                f"(*.md){_hint(folder, installed)}")


def lesson_paths(folder: Path, *, installed: bool | None = None) -> list[Path]:
    """The lesson files of `folder` (`*.md`, in name order), after `check_lesson_folder`; a folder
    with none raises LessonFolderError."""
    check_lesson_folder(folder, installed=installed)
    paths = sorted(folder.glob("*.md"))
    if not paths:
        raise LessonFolderError(f"{folder}: no lessons (*.md) in the lesson folder{_hint(folder, installed)}")
    return paths


def slug_of(path: Path) -> str:
    """`01-arithmetic-contract.md` → `arithmetic-contract`."""
    return _SLUG_PREFIX_RE.sub("", path.stem)
