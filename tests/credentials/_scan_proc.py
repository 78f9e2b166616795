"""Look for real values in every process this one can see: environ, cmdline, memory.

A script a confined command runs (and, as the control, the harness's unconfined
child): `python _scan_proc.py URL HARNESS_PID`. It first calls URL with the
placeholder in API_TOKEN (so a client of the proxy has had its answer), then reads
`/proc/<pid>/environ`, `cmdline` and `mem` (every readable mapping) of each pid it
sees, itself included, and prints one JSON line: what it could read of the harness's
pid, how many processes' memory it read, and the sha256 (16 digits) of each distinct
real value it found: never a value itself.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import sys
import urllib.request

PATTERN = re.compile(rb"stockade-realsecret-[0-9a-f]{32}")
LARGEST = 512 << 20


def _why(error: OSError) -> str:
    return errno.errorcode.get(error.errno or 0, type(error).__name__)


def scan(pid: str, hits: set[bytes]) -> dict[str, str]:
    report: dict[str, str] = {}
    for name in ("environ", "cmdline"):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as handle:
                hits.update(PATTERN.findall(handle.read()))
            report[name] = "read"
        except OSError as error:
            report[name] = _why(error)
    try:
        with open(f"/proc/{pid}/maps") as handle:
            maps = handle.read().splitlines()
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
            total = 0
            for line in maps:
                fields = line.split()
                if "r" not in fields[1] or line.endswith(("[vvar]", "[vsyscall]", "[vvar_vclock]")):
                    continue
                start, end = (int(part, 16) for part in fields[0].split("-"))
                if end - start > LARGEST:
                    continue
                try:
                    mem.seek(start)
                    data = mem.read(end - start)
                except (OSError, OverflowError, ValueError):
                    continue
                total += len(data or b"")
                hits.update(PATTERN.findall(data or b""))
            report["mem"] = f"read {total} bytes" if total else "nothing read"
    except OSError as error:
        report["mem"] = _why(error)
    return report


def main() -> None:
    url, harness = sys.argv[1], sys.argv[2]
    answer = ""
    if url != "-":
        request = urllib.request.Request(
            url, headers={"Authorization": "Bearer " + os.environ.get("API_TOKEN", "")}
        )
        with urllib.request.urlopen(request, timeout=20) as response:
            answer = response.read().decode()
    hits: set[bytes] = set()
    pids = sorted((entry for entry in os.listdir("/proc") if entry.isdigit()), key=int)
    memory_read = 0
    harness_report: dict[str, str] | str = "no such process"
    for pid in pids:
        report = scan(pid, hits)
        if report.get("mem", "").startswith("read"):
            memory_read += 1
        if pid == harness:
            harness_report = report
    print(
        json.dumps(
            {
                "answer": answer.strip(),
                "harness": harness_report,
                "processes": len(pids),
                "memory_read": memory_read,
                "hits": sorted(hashlib.sha256(hit).hexdigest()[:16] for hit in hits),
            }
        )
    )


if __name__ == "__main__":
    main()
