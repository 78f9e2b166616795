"""The `stockade` command line: `main()` runs one verb. Importing this package is light
(argument definitions only), so `stockade exec` stays on the standard library.
"""

from .entry import main as main
