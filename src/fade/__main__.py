"""`python -m fade`: the same command line as the `fade` executable."""

from fade.cli import main

raise SystemExit(main())
