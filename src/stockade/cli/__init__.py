"""The `stockade` command line, one module per job: `entry` (main and the dispatch),
`parser`, `fastpath` (exec, standard library only), `settings`, `errors`, and a module
per verb. This package imports nothing, so a face that reuses one verb's module (the
ACP agent's `session show`, `stockade mcp`'s settings) loads only that module.
"""
