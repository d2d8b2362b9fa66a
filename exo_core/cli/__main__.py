"""``python -m exo_core.cli`` runs the ``exo`` command."""

from exo_core.cli.main import main

raise SystemExit(main())
