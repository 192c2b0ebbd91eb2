"""python -m torch_kiln.eval: the kiln-eval command."""
import sys

from .cli import main

sys.exit(main())
