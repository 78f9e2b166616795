"""The `stockade` command line, one module per job: `parser`, `fastpath` (exec,
standard library only), `settings`, `errors`, and a module per verb. The program that
dispatches the words is `stockade.entry`, above the faces. This package imports
nothing, so the program loads only the verb's module it runs.
"""
