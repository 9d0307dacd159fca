"""coachctx policy playground: try a question against a sample athlete, see every step of the
decision, edit the policy in the browser (with lint), save it as a version, compare and revert
versions, see what a change does to a few hundred logged questions, share a view, reproduce a trace.

The page renders a `Decision`; it decides nothing itself. Run it with `make run`. The page lives
in `coachctx/playground/ui/` (one module per tab under `tabs/`).
"""

from coachctx.playground.ui.page import main

main()
