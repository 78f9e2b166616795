"""Compiled languages' everyday work in workspace-write (issue 37): `go build` and `go
test` of a module with no dependencies (offline: GOFLAGS=-mod=mod, GOPROXY=off),
`cargo build --offline` of a crate with a vendored dependency (as `cargo vendor` lays
it out), `make` with gcc. Both backends, root and nobody; Go's build cache and
cargo's home are the sandbox's own, never ~/.cache/go-build, ~/go or ~/.cargo."""

from __future__ import annotations

import hashlib
import json
import subprocess

import pytest

from .support import Place, Workflows

pytestmark = pytest.mark.nobody  # runs the harness as uid 65534 (tests/README.md)

GO_FILES = {
    "go.mod": "module example.com/hello\n\ngo 1.19\n",
    "hello.go": (
        'package main\n\nimport "fmt"\n\n'
        'func Greeting() string { return "hello from go" }\n\n'
        "func main() { fmt.Println(Greeting()) }\n"
    ),
    "hello_test.go": (
        'package main\n\nimport "testing"\n\n'
        "func TestGreeting(t *testing.T) {\n"
        '\tif Greeting() != "hello from go" {\n\t\tt.Fatal(Greeting())\n\t}\n}\n'
    ),
}

GO = """
set -euo pipefail
export GOFLAGS=-mod=mod GOPROXY=off
go build -o hello .
./hello
go test ./...
echo "gocache=$(go env GOCACHE)"
"""


def write(place: Place, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = place.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def go_workflow(wf: Workflows, place: Place, *, repository: bool) -> None:
    wf.need("go", "git")
    write(place, GO_FILES)
    if repository:
        # A module in a git repository, as a clone is: go stamps the build with its commit.
        env = {"HOME": str(place.home), "PATH": "/usr/bin:/bin"}
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "module"]):
            subprocess.run(["git", *args], cwd=place.root, env=env, check=True)
    place.hand_over()
    outcome = wf.run(place, [GO])
    outcome.assert_clean()
    text = outcome.text()
    assert "hello from go" in text and "ok  \texample.com/hello" in text, text
    assert f"gocache={place.caches / 'go-build'}" in text, text
    assert place.cache_entries("go-build"), "go cached nothing in the sandbox's cache"
    place.assert_home_untouched()


def test_go_build_and_go_test(wf: Workflows, place):
    go_workflow(wf, place, repository=True)


def test_go_build_and_go_test_outside_a_repository(wf: Workflows, place):
    """A scratch module, no repository: unconfined, go finds none and stamps nothing."""
    go_workflow(wf, place, repository=False)


TINY_FILES = {
    "Cargo.toml": '[package]\nname = "tiny"\nversion = "0.1.0"\nedition = "2021"\n',
    "src/lib.rs": 'pub fn greet() -> &\'static str {\n    "hello from a vendored crate"\n}\n',
}

CARGO_FILES = {
    "Cargo.toml": (
        '[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n\n'
        '[dependencies]\ntiny = "0.1"\n'
    ),
    "src/main.rs": 'fn main() {\n    println!("{}", tiny::greet());\n}\n',
    ".cargo/config.toml": (
        '[source.crates-io]\nreplace-with = "vendored-sources"\n\n'
        '[source.vendored-sources]\ndirectory = "vendor"\n'
    ),
}


def vendored(files: dict[str, str]) -> dict[str, str]:
    """`files` as `cargo vendor` writes a crate: with its .cargo-checksum.json."""
    checksums = {name: hashlib.sha256(text.encode()).hexdigest() for name, text in files.items()}
    package = hashlib.sha256(json.dumps(checksums, sort_keys=True).encode()).hexdigest()
    return {**files, ".cargo-checksum.json": json.dumps({"files": checksums, "package": package})}


CARGO = """
set -euo pipefail
cargo build --offline
./target/debug/app
echo "cargo-home=$CARGO_HOME"
"""


def test_cargo_build_offline_with_a_vendored_crate(wf: Workflows, place):
    wf.need("cargo")
    write(place, CARGO_FILES)
    write(place, {f"vendor/tiny/{k}": v for k, v in vendored(TINY_FILES).items()})
    place.hand_over()
    outcome = wf.run(place, [CARGO])
    outcome.assert_clean()
    text = outcome.text()
    assert "hello from a vendored crate" in text, text
    assert f"cargo-home={place.caches / 'cargo'}" in text, text
    place.assert_home_untouched()


MAKE_FILES = {
    "hello.c": '#include <stdio.h>\nint main(void) { puts("hello from make"); return 0; }\n',
    "Makefile": "hello: hello.o\n\t$(CC) -o $@ $^\n\nhello.o: hello.c\n\t$(CC) -c -o $@ $<\n",
}


def test_make_with_gcc(wf: Workflows, place):
    wf.need("make", "gcc")
    write(place, MAKE_FILES)
    place.hand_over()
    outcome = wf.run(place, ["make CC=gcc && ./hello"])
    outcome.assert_clean()
    assert "hello from make" in outcome.text(), outcome.text()
    place.assert_home_untouched()
