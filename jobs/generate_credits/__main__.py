"""``python -m halfmq.jobs.generate_credits``."""

import sys

from halfmq.jobs.generate_credits.cli import main

sys.exit(main())
