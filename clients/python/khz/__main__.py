"""python3 -m khz: the `khz` command."""
import sys

from .cli import main

sys.exit(main())
