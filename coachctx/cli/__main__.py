"""`python -m coachctx.cli`."""

import sys

from coachctx.cli.entry import main

sys.exit(main())
