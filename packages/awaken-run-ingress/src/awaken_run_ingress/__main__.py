"""``python -m awaken_run_ingress worker ...``."""

import sys

from ._cli import main

sys.exit(main())
