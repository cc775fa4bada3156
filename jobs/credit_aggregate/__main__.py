"""``python -m halfmq.jobs.credit_aggregate``, or ``spark-submit jobs/credit_aggregate/__main__.py`` (hence the absolute import)."""

import sys

from halfmq.jobs.credit_aggregate.cli import main

sys.exit(main())
