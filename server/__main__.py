"""``python -m server`` runs the ``wmap`` command line."""

from server.cli.main import main

raise SystemExit(main())
