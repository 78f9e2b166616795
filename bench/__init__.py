"""stockade's benchmark suite: `python -m bench [spawn|cli|stress|actors|log ...] [--quick]`.

Not tests: nothing here asserts a speed. A run fails only when a correctness fact
does not hold (a job saw another session's policy, a write escaped its root, fds
did not return to baseline). See bench/README.md and docs/performance.md.
"""
