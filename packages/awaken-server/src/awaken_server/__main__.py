"""``python -m awaken_server``: the same as ``awaken serve``."""

from ._cli import main

raise SystemExit(main())
