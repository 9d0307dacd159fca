"""The engine: from a question and an athlete's bundle to one Decision.

Stages in the order `pipeline.select` runs them: `text` (tokenise), `routing`, `lookup` (policy
lists and excludes), `modifiers` (scope), `availability`, `budget`, `audit`, then `prompt` and
`token_count`, and `decision`. `plan` is the value the stages pass along; `policy`, `fragments`
and `services` are what they read. Nothing here imports from `coachctx.tools`, `coachctx.cli` or
the playground (tests/test_layout.py checks it).
"""
