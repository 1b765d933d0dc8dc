"""Safe writing of an export: `check_target` (the folder, checked before any page is built) and
`SafeWriter` (every file under that folder only, never through a symbolic link); every refusal is
a one-line `ExportError` (a ValueError)."""

from __future__ import annotations

import os
from pathlib import Path


class ExportError(ValueError):
    """The export target cannot be used (not empty, a file, a symbolic link, not writable)."""


def check_target(out_dir: str | Path, force: bool = False) -> Path:
    """The export folder, checked before any work: it may not be a file or a symbolic link, it must
    be creatable and writable, and it must be empty unless `force`. Raises ExportError (one line)."""
    out = Path(out_dir)
    if out.is_symlink():
        raise ExportError(f"{out} is a symbolic link; export into a real folder (no file is written "
                          f"through a link)")
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out} is a file, not a folder; give a folder to export into")
    if out.is_dir():
        entries = list(out.iterdir())
        if entries and not force:
            raise ExportError(f"{out} is not empty ({len(entries)} entries); use --force to overwrite the "
                              f"files lowprec writes there")
    else:
        try:
            out.mkdir(parents=True)
        except OSError as exc:
            raise ExportError(f"cannot create {out}: {exc.strerror or exc}") from None
    probe = out / ".lowprec-write-test"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ExportError(f"cannot write into {out}: {exc.strerror or exc}") from None
    return out


class SafeWriter:
    """Writes files under one folder only: every path component below the root must be a real
    folder (never a symbolic link), the resolved target must lie inside the root, and the file is
    opened without following a link (O_NOFOLLOW)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.real_root = root.resolve()
        self.written: dict[str, int] = {}  # relative path → bytes

    def _target(self, rel: str) -> Path:
        parts = Path(rel).parts
        if not parts or Path(rel).is_absolute() or ".." in parts:
            raise ExportError(f"refusing to write {rel!r}: not a plain path inside {self.root}")
        current = self.root
        for part in parts[:-1]:
            current = current / part
            if current.is_symlink():
                raise ExportError(f"{current} is a symbolic link; refusing to write through it")
            if current.exists() and not current.is_dir():
                raise ExportError(f"{current} is a file where lowprec writes a folder")
            if not current.exists():
                try:
                    current.mkdir()
                except OSError as exc:
                    raise ExportError(f"cannot create {current}: {exc.strerror or exc}") from None
        target = current / parts[-1]
        if target.is_symlink():
            raise ExportError(f"{target} is a symbolic link; refusing to write through it")
        if target.exists() and target.is_dir():
            raise ExportError(f"{target} is a folder where lowprec writes a file")
        if not str(target.parent.resolve()).startswith(str(self.real_root)):
            raise ExportError(f"refusing to write {target}: outside {self.root}")
        return target

    def write_bytes(self, rel: str, data: bytes) -> Path:
        target = self._target(rel)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(target, flags, 0o644)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        except OSError as exc:
            raise ExportError(f"cannot write {target}: {exc.strerror or exc}") from None
        self.written[rel] = len(data)
        return target

    def write_text(self, rel: str, text: str) -> Path:
        return self.write_bytes(rel, text.encode("utf-8"))

    def copy(self, src: Path, rel: str) -> None:
        if rel not in self.written:
            self.write_bytes(rel, src.read_bytes())
