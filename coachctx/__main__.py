"""`python -m coachctx`: the command line."""

import sys

from coachctx.cli.entry import main

sys.exit(main())
