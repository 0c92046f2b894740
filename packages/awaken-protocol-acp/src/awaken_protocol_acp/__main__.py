"""``python -m awaken_protocol_acp --agent FILE``: ``awaken acp`` without the runtime CLI."""

from ._cli import main

raise SystemExit(main())
