# Recipes for stockade. `just` itself comes with `pip install -e '.[dev]'` (rust-just).

venv := ".venv"
python := venv / "bin/python"

# Install and run the whole test suite (the README's second command).
test:
    python3 -m venv {{venv}} && {{venv}}/bin/pip install -q -e '.[test,bwrap]' && {{python}} -m pytest

# The main job: a scripted agent session on the real sandbox (the README's first command).
demo:
    python3 -m venv {{venv}} && {{venv}}/bin/pip install -q -e '.[bwrap]' && {{venv}}/bin/stockade demo

# Benchmarks (see bench/README.md and docs/performance.md); never part of the tests.
bench *ARGS:
    {{python}} -m bench {{ARGS}}

# The one-minute smoke run CI does: isolation asserted, speed not.
bench-quick:
    {{python}} -m bench --quick

# A full run that refreshes the committed plots in docs/perf/.
bench-docs:
    {{python}} -m bench --plots docs/perf

# Install the peers (Codex CLI, sandbox-runtime) for side-by-side numbers.
bench-peers DIR="$HOME/.cache/stockade-bench-peers":
    mkdir -p {{DIR}} && cd {{DIR}} && npm install @openai/codex @anthropic-ai/sandbox-runtime

# Build the platform wheel (with the static launcher) into dist/.
wheel:
    {{python}} -m pip wheel --no-deps --no-build-isolation -w dist .

# Ruff, then mypy (strict; what it checks and how: [tool.mypy] in pyproject.toml).
lint:
    {{venv}}/bin/ruff check src tests bench launcher examples
    {{venv}}/bin/ruff format --check src tests bench launcher examples
    {{venv}}/bin/mypy
