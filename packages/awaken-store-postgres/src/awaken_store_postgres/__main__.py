"""``python -m awaken_store_postgres``: the schema check/migrate command."""

import sys

from ._cli import main

sys.exit(main())
