"""Put this folder on sys.path so that the tests can ``import naive_condensed``."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
