"""Serve the app in a child process and wait until it answers: the one serve-and-wait helper of the
browser tests, the page benchmarks (`benchmarks.app`, `benchmarks.isolation`) and the screenshots
(`app.screenshots`).

`serve_and_wait()` starts `lowprec serve --no-show --port PORT` (or any command line, `{port}` in it
replaced by a free port of 127.0.0.1) with its output in a temporary file (a pipe nobody reads
would block a server that logs a lot), then asks for `ready_path` one request at a time (a timed
out request would leave its session building) until it answers 200. A server that exits first,
or does not answer within `timeout_s`, is a `ServeError` carrying the end of its log. The
returned `ServedApp` is a context manager that stops the server (terminate, then kill) on exit.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["SERVE_ARGV", "ServeError", "ServedApp", "free_port", "serve_and_wait"]

#: the default command line: the app as `lowprec serve` runs it, on the placeholder port
SERVE_ARGV: tuple[str, ...] = (sys.executable, "-m", "lowprec.app.cli", "serve", "--no-show", "--port", "{port}")


class ServeError(RuntimeError):
    """The server exited before it answered, or did not answer in time (the message ends with its log)."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port of `host` that nothing listens on right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass
class ServedApp:
    """A server started by `serve_and_wait`: its base URL (no trailing slash), process and log file."""

    url: str
    port: int
    proc: subprocess.Popen[bytes]
    log_path: Path

    def log(self, tail: int = 4000) -> str:
        """The last `tail` characters the server printed."""
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-tail:]
        except OSError:
            return ""

    def running(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout_s: float = 15.0) -> int | None:
        """Terminate the server (kill it when it does not exit in `timeout_s`); its exit status."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=timeout_s)
        return self.proc.returncode

    def close(self) -> None:
        """Stop the server and remove its log."""
        self.stop()
        try:
            self.log_path.unlink()
        except OSError:
            pass

    def __enter__(self) -> ServedApp:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _answers(url: str, request_timeout_s: float) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=request_timeout_s) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def serve_and_wait(argv: Sequence[str] | None = None, *, ready_path: str = "/", timeout_s: float = 300.0,
                   port: int | None = None, env: Mapping[str, str] | None = None, cwd: str | Path | None = None,
                   request_timeout_s: float = 120.0, attempts: int = 3) -> ServedApp:
    """Start the server (`SERVE_ARGV` unless `argv`; `{port}` in any argument becomes the port) and
    wait until `ready_path` answers 200; see the module docstring. A busy shared machine starts
    slowly: the default waits up to five minutes. A free port can be taken by another process
    between `free_port` and the server's bind: a server that exits saying its port is in use is
    started again on another (at most `attempts` times, when the port was not given)."""
    for attempt in range(attempts):
        try:
            return _start(argv, ready_path, timeout_s, free_port() if port is None else port, env, cwd,
                          request_timeout_s)
        except ServeError as exc:
            if port is not None or "already in use" not in str(exc) or attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def _start(argv: Sequence[str] | None, ready_path: str, timeout_s: float, port: int,
           env: Mapping[str, str] | None, cwd: str | Path | None, request_timeout_s: float) -> ServedApp:
    command = [str(a).replace("{port}", str(port)) for a in (argv or SERVE_ARGV)]
    fd, log_name = tempfile.mkstemp(prefix="lowprec-serve-", suffix=".log")
    log_path = Path(log_name)
    with os.fdopen(fd, "wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=None if env is None else dict(env), cwd=cwd)
    app = ServedApp(f"http://127.0.0.1:{port}", port, proc, log_path)
    end = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            text = app.log()
            app.close()
            raise ServeError(f"the server exited with status {proc.returncode} before answering: {text}")
        if _answers(app.url + ready_path, request_timeout_s) and proc.poll() is None:
            return app  # answered while our process runs (not another one that holds the port)
        if time.monotonic() > end:
            text = app.log()
            app.close()
            raise ServeError(f"the server did not answer {ready_path} within {timeout_s:.0f} s: {text}")
        time.sleep(0.3)
