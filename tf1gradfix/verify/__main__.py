"""``python -m tf1gradfix.verify ORIGINAL MIGRATED [options]``."""

import sys

from tf1gradfix.verify.command import main

sys.exit(main())
