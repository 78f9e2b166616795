"""Where a Unix socket's directory is made: the temp root, or /tmp when a socket there
would not fit a Unix socket's address; and the exec proxy's failure to listen said in
one line, never a traceback."""

from __future__ import annotations

import os
import socket
import tempfile

import pytest

from stockade.network import UNIX_PATH_MAX, socket_parent
from stockade.network import serve as serve_module


def test_a_short_temp_root_is_kept(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert socket_parent(None, "d-12345678/proxy.sock") == os.path.realpath(tmp_path)


def test_a_directory_the_caller_names_is_kept_however_deep(tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 40)
    deep.mkdir(parents=True)
    assert socket_parent(str(deep), "s" * 50) == os.path.realpath(deep)


def test_a_deep_one_gives_way_to_tmp_where_the_socket_fits(monkeypatch, tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 40)
    deep.mkdir(parents=True)
    below = "stockade-proxy-12345678/proxy.sock"
    # The control: a socket at that length cannot be made.
    with socket.socket(socket.AF_UNIX) as probe, pytest.raises(OSError):
        probe.bind(str(deep / ("s" * (UNIX_PATH_MAX - len(str(deep))))))
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    assert socket_parent(None, below) == "/tmp"
    # The measure is the real path: a short link to a deep directory is deep.
    link = tmp_path / "l"
    link.symlink_to(deep)
    monkeypatch.setattr(tempfile, "tempdir", str(link))
    assert socket_parent(None, below) == "/tmp"


def test_a_proxy_that_fails_on_the_system_is_one_line(monkeypatch, capsys):
    async def failing(*_args: object) -> None:
        raise OSError(98, "Address in use")

    monkeypatch.setattr(serve_module, "serve", failing)
    assert serve_module.main(["--allow", "example.com"]) == 1
    said = capsys.readouterr().err
    assert said == "stockade: the network proxy failed: [Errno 98] Address in use\n"
