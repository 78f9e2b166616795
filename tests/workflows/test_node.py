"""Node's everyday work in workspace-write (issue 37): `npm install` of a package from a
local tarball (packed by the fixture, beside the home) and `npm test`; a dev server on
127.0.0.1 and `curl` to it in one command. Both backends, root and nobody; npm's
cache is the sandbox's own, never ~/.npm."""

from __future__ import annotations

import io
import json
import tarfile

import pytest

from .support import Place, Workflows

pytestmark = pytest.mark.nobody  # runs the harness as uid 65534 (tests/README.md)

TINY = {
    "package/package.json": json.dumps({"name": "tiny", "version": "1.0.0", "main": "index.js"}),
    "package/index.js": "exports.greet = () => 'hello from tiny';\n",
}

TEST_JS = """
const assert = require('assert');
assert.strictEqual(require('tiny').greet(), 'hello from tiny');
console.log('npm-test-ok');
"""


def pack(place: Place) -> str:
    """tiny-1.0.0.tgz as `npm pack` lays it out (everything under package/)."""
    path = place.fixtures / "tiny-1.0.0.tgz"
    with tarfile.open(path, "w:gz") as archive:
        for name, text in TINY.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            archive.addfile(info, io.BytesIO(data))
    return str(path)


def test_npm_install_from_a_tarball_and_npm_test(wf: Workflows, place):
    wf.need("node", "npm")
    tarball = pack(place)
    manifest = {
        "name": "app",
        "version": "1.0.0",
        "private": True,
        "scripts": {"test": "node test.js"},
        "dependencies": {"tiny": f"file:{tarball}"},
    }
    (place.root / "package.json").write_text(json.dumps(manifest, indent=2))
    (place.root / "test.js").write_text(TEST_JS)
    place.hand_over()
    outcome = wf.run(
        place,
        [
            "npm install --no-audit --no-fund && npm test",
            'echo "npm-cache=$(npm config get cache)"',
        ],
    )
    outcome.assert_clean()
    assert "npm-test-ok" in outcome.text(0), outcome.text(0)
    assert (place.root / "node_modules" / "tiny" / "index.js").is_file()
    assert f"npm-cache={place.caches / 'npm'}" in outcome.text(1), outcome.text(1)
    assert place.cache_entries("npm"), "npm cached nothing in the sandbox's cache"
    place.assert_home_untouched()


DEV_SERVER = """
set -euo pipefail
node -e "require('http').createServer((q, s) => s.end('hello from the dev server'))
  .listen(0, '127.0.0.1', function () {
    require('fs').writeFileSync('port', String(this.address().port)) })" & server=$!
trap 'kill $server' EXIT
for _ in $(seq 200); do [ -s port ] && break; sleep 0.05; done
curl -sS --fail --max-time 10 "http://127.0.0.1:$(cat port)/"
"""


def test_a_dev_server_and_curl_in_one_command(wf: Workflows, place):
    wf.need("node", "curl")
    place.hand_over()
    outcome = wf.run(place, [DEV_SERVER])
    outcome.assert_clean()
    assert "hello from the dev server" in outcome.text(), outcome.text()
    place.assert_home_untouched()
