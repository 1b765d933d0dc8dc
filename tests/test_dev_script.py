"""`./dev` (issue 33): `help` exits 0, an unknown command exits 2; setting up holds a lock so two
commands started together never run two pip installs into one `.venv`. Nothing here sets anything up:
the lock is checked by sourcing the script (which then only defines its functions) and running
`with_lock` on a harmless job in a temporary folder, with flock(1) and with the mkdir fallback."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT / "dev"


def _bash(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


def test_help_exits_0_and_an_unknown_command_exits_2(tmp_path: Path) -> None:
    for word in ("help", "--help"):
        r = subprocess.run([str(DEV), word], cwd=tmp_path, capture_output=True, text=True, timeout=30, check=False)
        assert r.returncode == 0 and r.stderr == "", r.stderr
        assert "./dev test" in r.stdout and "./dev help" in r.stdout
    r = subprocess.run([str(DEV), "tset"], cwd=tmp_path, capture_output=True, text=True, timeout=30, check=False)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("dev: unknown command 'tset'\n") and "./dev test" in r.stderr
    assert not (tmp_path / ".venv").exists()  # help sets nothing up


@pytest.mark.parametrize("locker", ["flock", "mkdir"])
def test_setup_lock_serialises_two_commands(tmp_path: Path, locker: str) -> None:
    if locker == "flock" and shutil.which("flock") is None:
        pytest.skip("flock(1) is not installed here")
    log = tmp_path / "log"
    hide = ('command() { if [ "${1:-}" = -v ] && [ "${2:-}" = flock ]; then return 1; fi; builtin command "$@"; }\n'
            if locker == "mkdir" else "")
    script = (f"source {str(DEV)!r}\n{hide}VENV={str(tmp_path / 'venv')!r}\n"
              f"job() {{ echo \"start $1\" >> {str(log)!r}; sleep 1; echo \"end $1\" >> {str(log)!r}; }}\n"
              "with_lock job A &\n"
              "sleep 0.3\n"
              f"with_lock job B 2> {str(tmp_path / 'b.err')!r}\n"
              "wait\n"
              "with_lock false && echo 'no status' || echo \"status $?\"\n"  # a failing job: its status, lock freed
              "with_lock job C\n")
    r = _bash(script, tmp_path)
    assert r.returncode == 0, r.stderr
    assert log.read_text().split("\n") == ["start A", "end A", "start B", "end B", "start C", "end C", ""]
    assert "waiting for it" in (tmp_path / "b.err").read_text()  # the second one says why it waits
    assert r.stdout.strip() == "status 1"
    assert (tmp_path / "venv").is_dir() and not (tmp_path / "venv" / ".lowprec-lock.d").exists()
