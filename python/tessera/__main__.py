"""``python -m tessera`` is the ``tessera`` command."""

import sys

from tessera.cli import main

sys.exit(main())
