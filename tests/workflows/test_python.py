"""Python's everyday work in workspace-write (issue 37): `python -m venv`, `pip install`
from a local package index served on 127.0.0.1 inside the command, twice (the second
from pip's cache: the sandbox's own, never ~/.cache/pip), and `pytest` whose fixture
serves HTTP on 127.0.0.1 and fetches from it. Both backends, root and nobody; all
offline: the wheel is built by the fixture, byte by byte."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

import pytest

from .support import SYSTEM_PYTHON, Place, Workflows

pytestmark = pytest.mark.nobody  # runs the harness as uid 65534 (tests/README.md)

WHEEL = "tinypkg-1.0-py3-none-any.whl"

# A static file server for the local index: it binds 127.0.0.1 on the port it is
# given, writes the port to a file once it listens, and logs every path it served. Its
# files may be cached for an hour, as an index says of its files (pip caches no
# response without). The port is fixed, as an index's address is (pip's cache is keyed
# by the URL): each call has a loopback of its own, where it is free.
SERVE = """
import functools, http.server, os, sys
directory, port_file, log_file, port = sys.argv[1:5]
class Handler(http.server.SimpleHTTPRequestHandler):
    def end_headers(self):
        self.send_header("Cache-Control", "max-age=3600, public")
        super().end_headers()
    def log_message(self, format, *args):
        with open(log_file, "a") as log:
            log.write(self.path + "\\n")
server = http.server.ThreadingHTTPServer(
    ("127.0.0.1", int(port)), functools.partial(Handler, directory=directory))
with open(port_file + ".new", "w") as out:
    out.write(str(server.server_address[1]))
os.rename(port_file + ".new", port_file)
server.serve_forever()
"""

START = """
{python} {serve} {index} {name}.port {name}.log 8765 & server=$!
trap 'kill $server' EXIT
for _ in $(seq 200); do [ -s {name}.port ] && break; sleep 0.05; done
url=http://127.0.0.1:$(cat {name}.port)/simple/
"""


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


def build_wheel(target: Path) -> Path:
    """tinypkg 1.0, pure Python, written as a wheel is (PEP 427) with no build tool."""
    files = {
        "tinypkg/__init__.py": b"def greet():\n    return 'hello from tinypkg'\n",
        "tinypkg-1.0.dist-info/METADATA": (
            b"Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\nSummary: a test package\n"
        ),
        "tinypkg-1.0.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: stockade-tests\nRoot-Is-Purelib: true\n"
            b"Tag: py3-none-any\n"
        ),
    }
    record = "".join(f"{name},{_record_hash(data)},{len(data)}\n" for name, data in files.items())
    files["tinypkg-1.0.dist-info/RECORD"] = (record + "tinypkg-1.0.dist-info/RECORD,,\n").encode()
    path = target / WHEEL
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
    return path


def local_index(place: Place) -> tuple[Path, Path]:
    """A PEP 503 simple index with tinypkg, and the server script; beside the home."""
    index = place.fixtures / "index"
    (index / "files").mkdir(parents=True)
    (index / "simple" / "tinypkg").mkdir(parents=True)
    wheel = build_wheel(index / "files")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (index / "simple" / "index.html").write_text('<a href="tinypkg/">tinypkg</a>\n')
    (index / "simple" / "tinypkg" / "index.html").write_text(
        f'<a href="../../files/{WHEEL}#sha256={digest}">{WHEEL}</a>\n'
    )
    serve = place.fixtures / "serve.py"
    serve.write_text(SERVE)
    return index, serve


def test_venv_and_pip_install_twice_the_second_from_the_cache(wf: Workflows, place):
    wf.need(SYSTEM_PYTHON)
    index, serve = local_index(place)
    place.hand_over()
    pip = "venv/bin/pip --disable-pip-version-check"
    # A plain-http index is cached only from a trusted host (pip's own rule).
    install = f'{pip} install --trusted-host 127.0.0.1 --index-url "$url" tinypkg\n'

    def start(name: str) -> str:
        return START.format(python=SYSTEM_PYTHON, serve=serve, index=index, name=name)

    first = (
        "set -euo pipefail\n"
        f"{SYSTEM_PYTHON} -m venv venv\n"
        + start("first")
        + install
        + "venv/bin/python -c 'import tinypkg; print(tinypkg.greet())'\n"
        'echo "pip-cache=$(' + pip + ' cache dir)"\n'
    )
    second = (
        "set -euo pipefail\n"
        f"{pip} uninstall -q -y tinypkg\n"
        + start("second")
        + install
        + "venv/bin/python -c 'import tinypkg; print(tinypkg.greet())'\n"
    )
    outcome = wf.run(place, [first, second])
    outcome.assert_clean()
    for result in outcome.results:
        assert "hello from tinypkg" in result["text"], result["text"]
    # The cache the command saw is the sandbox's own, and the first install filled it.
    assert f"pip-cache={place.caches / 'pip'}" in outcome.text(0), outcome.text(0)
    assert any(name.startswith("http") for name in place.cache_entries("pip"))
    # The second install read the wheel from that cache: the server never sent it again.
    assert "Using cached" in outcome.text(1), outcome.text(1)
    first_log = (place.root / "first.log").read_text().splitlines()
    second_log = (place.root / "second.log").read_text().splitlines()
    assert f"/files/{WHEEL}" in first_log, first_log
    assert f"/files/{WHEEL}" not in second_log, second_log
    place.assert_home_untouched()


CONFTEST = """
import http.server, threading
import pytest

class Reply(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"served-by-the-fixture"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass

@pytest.fixture
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Reply)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
"""

TEST = """
import urllib.request

def test_fetches_from_its_fixture(server):
    with urllib.request.urlopen(server, timeout=10) as reply:
        assert reply.read() == b"served-by-the-fixture"
"""


def test_pytest_with_a_fixture_serving_http_on_the_loopback(wf: Workflows, place):
    (place.root / "conftest.py").write_text(CONFTEST)
    (place.root / "test_app.py").write_text(TEST)
    place.hand_over()
    # This checkout's interpreter and its pytest (for nobody: their public copies).
    path = f"PYTHONPATH={wf.public.pythonpath} " if wf.who == "nobody" else ""
    outcome = wf.run(place, [f"{path}{wf.python} -m pytest -q test_app.py"])
    outcome.assert_clean()
    assert "1 passed" in outcome.text(), outcome.text()
    place.assert_home_untouched()
