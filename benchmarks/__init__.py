"""The project's benchmarks: one module per ``exo bench NAME`` (exo_core/cli/bench_cmd.py lists them).

Each measures a thing and its baseline in the same run and reports the ratio (docs/benchmarks.md). Run one
as ``exo bench NAME`` from a source checkout; ``exo bench`` runs ``python -m benchmarks.<module>`` with the
checkout and the test kits it shares with the tests (``KIT_FOLDERS`` there) on the import path. A person's
own full run writes ``$EXO_HOME/bench/<name>.json``; the committed ``benchmarks/results/`` holds one current
file per benchmark and changes only under a developer's ``--update-results``.
"""
