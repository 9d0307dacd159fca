"""coachctx benchmark: `python -m bench.run` (or `make bench`) writes bench/REPORT.md and its plots.

Modules: `workload` (the dev set, sample bundles, the generated question log), `grow` (the bundle
growth generator), `measure` (the five measurements), `report` (Markdown and plots), `run` (main).
"""
