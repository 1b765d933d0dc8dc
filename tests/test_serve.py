"""`lowprec serve` as a new user meets it (issue 33, F3 and the server items): a busy port or a bad
address is one error line with nothing said before it; a running server prints one start-up line,
stops cleanly on SIGTERM (no leaked-semaphore warning, no traceback), answers a static path with a
NUL byte with a 4xx instead of a 500, sends a lesson's file name (`/lesson/01-…`) to the lesson or
to a page with a way back, and keeps a closed browser connection out of its log. Also the
serve-and-wait helper the tests and benchmarks share (`app.serving`)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from lowprec.app.serving import ServeError, free_port, serve_and_wait

ROOT = Path(__file__).resolve().parents[1]


def _lowprec(*argv: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lowprec.app.cli", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def test_serve_on_a_busy_port_is_one_line_and_announces_nothing() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = _lowprec("serve", "--no-show", "--port", str(port))
    assert r.returncode == 2
    assert r.stdout == ""  # no "serving on …" before the error
    assert r.stderr == (f"lowprec: error: port {port} on 127.0.0.1 is already in use (another lowprec serve?); "
                        f"pick another with --port, or stop the one running\n")


@pytest.mark.parametrize("address, message", [
    ("256.1.1.1", "cannot listen on '256.1.1.1': not an address of this machine"),
    ("no-such-host.invalid", "cannot listen on 'no-such-host.invalid': not an address of this machine"),
    ("192.0.2.77", "cannot listen on 192.0.2.77:"),  # a valid address that is not this machine's (TEST-NET-1)
])
def test_serve_on_a_bad_address_is_one_line(address: str, message: str) -> None:
    r = _lowprec("serve", "--no-show", "--address", address, "--port", str(free_port()))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(f"lowprec: error: {message}") and r.stderr.count("\n") == 1, r.stderr
    assert "Traceback" not in r.stderr


def test_check_address_refuses_before_any_socket() -> None:
    from lowprec.app.server import check_address

    check_address("127.0.0.1", 5006)
    check_address("localhost", 0)
    for bad, match in ((" 127.0.0.1", "address must be"), ("", "address must be"), ("a b", "not an address")):
        with pytest.raises(ValueError, match=match):
            check_address(bad, 5006)
    for port in (-1, 65536, True, 5006.0):
        with pytest.raises(ValueError, match="port must be an integer 0..65535"):
            check_address("127.0.0.1", port)  # type: ignore[arg-type]


def test_a_served_app_says_one_line_answers_bad_paths_with_4xx_and_stops_cleanly_on_sigterm() -> None:
    app = serve_and_wait(cwd=ROOT)
    try:
        for path in ("/_static/lowprec/lowprec.js%00.py", "/static/js/bokeh.min.js%00", "/_static/lowprec/%00",
                     "/static/extensions/panel/css/listpanel.css%00.css"):
            with pytest.raises(urllib.error.HTTPError, match=r"HTTP Error 4\d\d") as err:
                urllib.request.urlopen(app.url + path, timeout=60)
            assert 400 <= err.value.code < 500, (path, err.value.code)
        with urllib.request.urlopen(app.url + "/_static/lowprec/lowprec.js", timeout=60) as ok:
            assert ok.status == 200  # the real file still comes
        app.proc.send_signal(signal.SIGTERM)
        assert app.proc.wait(timeout=60) == 0
        log = app.log(100_000)
    finally:
        app.close()
    assert log.count("lowprec: serving on http://127.0.0.1:") == 1
    assert "Launching server" not in log  # Panel's own start-up line: one line only
    assert "leaked semaphore" not in log and "Traceback" not in log and "Uncaught exception" not in log, log


def test_lesson_file_names_and_unknown_pages_get_a_way_back() -> None:
    """`/lesson/01-arithmetic-contract` (the lesson's file name) redirects to the lesson; an unknown
    page is a 404 page that says so and links to the start page and the lessons."""
    from lowprec.course.lesson_files import DEFAULT_ROOT
    from lowprec.course.lessons import load_lessons

    first = load_lessons()[0]
    stem = first.path.stem
    assert first.path.parent == Path(DEFAULT_ROOT) and stem != first.slug
    with serve_and_wait(cwd=ROOT) as app:
        with urllib.request.urlopen(f"{app.url}/lesson/{stem}", timeout=120) as reply:
            assert reply.status == 200 and reply.url.endswith(f"/lesson/{first.slug}")
        with pytest.raises(urllib.error.HTTPError, match=r"HTTP Error 4\d\d") as err:
            urllib.request.urlopen(f"{app.url}/lesson/no-such-lesson", timeout=60)
        page = err.value.read().decode("utf-8")
        assert err.value.code == 404
        assert "no-such-lesson" in page and 'href="/"' in page and 'href="/#lessons"' in page
        with pytest.raises(urllib.error.HTTPError, match=r"HTTP Error 4\d\d") as err:
            urllib.request.urlopen(f"{app.url}/widget/<script>x", timeout=60)
        page = err.value.read().decode("utf-8")
        assert err.value.code == 404 and "<script>x" not in page and "&lt;script&gt;x" in page


def test_a_browser_closing_its_socket_mid_send_is_no_traceback() -> None:
    """The loop's exception handler drops a closed websocket or stream (the end of a session, a tab
    closed while an update went out) and passes everything else to asyncio's default handler."""
    from tornado.iostream import StreamClosedError
    from tornado.websocket import WebSocketClosedError

    from lowprec.app.server import _quiet_closed_sockets

    seen: list[dict[str, Any]] = []

    class Loop:
        def default_exception_handler(self, context: dict[str, Any]) -> None:
            seen.append(context)

    loop: Any = Loop()
    _quiet_closed_sockets(loop, {"message": "Future exception was never retrieved", "exception": WebSocketClosedError()})
    _quiet_closed_sockets(loop, {"message": "Task exception was never retrieved", "exception": StreamClosedError()})
    assert seen == []
    other = {"message": "Task exception was never retrieved", "exception": ZeroDivisionError()}
    _quiet_closed_sockets(loop, other)
    assert seen == [other]
    assert asyncio.iscoroutinefunction(_quiet_closed_sockets) is False


def test_serve_and_wait_reports_a_server_that_exits_and_cleans_up() -> None:
    with pytest.raises(ServeError, match=r"exited with status 3 before answering: boom"):
        serve_and_wait([sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"], timeout_s=60)
    with pytest.raises(ServeError, match="did not answer / within 1 s"):
        serve_and_wait([sys.executable, "-c", "import time; time.sleep(30)"], timeout_s=1)
    script = ("import http.server, sys\n"
              "http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), http.server.SimpleHTTPRequestHandler)"
              ".serve_forever()\n")
    with serve_and_wait([sys.executable, "-c", script, "{port}"], cwd=ROOT, timeout_s=60) as app:
        assert app.running() and app.url == f"http://127.0.0.1:{app.port}"
        log = app.log_path
    assert not app.running() and not log.exists()
    assert os.path.basename(str(log)).startswith("lowprec-serve-")
