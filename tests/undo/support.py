"""A tree's state read independently of the history (scandir, lstat, plain reads), the
sandbox's placeholders (empty, modified at 1970-01-01) left out."""

from __future__ import annotations

import hashlib
import os
import stat


def tree_state(root: str) -> dict[str, tuple]:
    state: dict[str, tuple] = {}
    stack = [""]
    while stack:
        directory = stack.pop()
        for item in os.scandir(os.path.join(root, directory) if directory else root):
            path = f"{directory}/{item.name}" if directory else item.name
            st = os.lstat(item.path)
            if st.st_mtime_ns == 0:
                continue  # a placeholder the sandbox mounts a cover on
            if stat.S_ISLNK(st.st_mode):
                state[path] = ("link", os.readlink(item.path))
            elif stat.S_ISDIR(st.st_mode):
                state[path] = ("dir", stat.S_IMODE(st.st_mode))
                stack.append(path)
            elif stat.S_ISREG(st.st_mode):
                with open(item.path, "rb") as handle:
                    digest = hashlib.sha256(handle.read()).hexdigest()
                state[path] = ("file", stat.S_IMODE(st.st_mode), digest)
            else:
                state[path] = ("other", stat.S_IMODE(st.st_mode))
    return state


def tree_hash(root: str) -> str:
    return hashlib.sha256(repr(sorted(tree_state(str(root)).items())).encode()).hexdigest()


def write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


def populate(root: str) -> None:
    """A small project: nested directories, modes, a link."""
    write(f"{root}/README.md", "# project\n")
    write(f"{root}/src/app.py", "print('hi')\n")
    write(f"{root}/src/lib/util.py", "def f(): pass\n")
    write(f"{root}/docs/guide.md", "guide\n")
    os.chmod(f"{root}/src/app.py", 0o755)
    os.symlink("lib/util.py", f"{root}/src/util-link")
