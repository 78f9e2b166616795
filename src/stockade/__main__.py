from .entry import console

raise SystemExit(console())
