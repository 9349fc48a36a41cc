"""Put ``tests/`` on sys.path: the polar tests rerun the classes of ``golub_reinsch``."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent))
