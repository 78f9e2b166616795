"""The `stockade` command line: `main()` runs one verb. Importing this package is light
(the dispatch and the fast path's reader), so `stockade exec` stays on the standard library.
"""

from .entry import main as main
