# The example project's root: `shop` is importable from its tests.  The fixtures come from
# kbroker's pytest plugin, which installing kbroker registers (entry point pytest11).
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
