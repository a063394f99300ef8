"""``python -m proximity_client``: the ``proximity`` command line."""
import sys

from .cli import main

sys.exit(main())
