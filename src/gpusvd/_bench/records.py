"""JSON records of a benchmark: a one-line error, JSON-safe values, an atomic write."""

import json
import math
import os

import numpy as np


def short_error(exc: BaseException, limit: int = 400) -> str:
    """One line for a JSON record or a log: the exception's type and message, cut."""
    s = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return s if len(s) <= limit else s[: limit - 3] + "..."


def json_ready(x, nonfinite=str):
    """JSON-safe copy: NumPy scalars and arrays to Python, dict keys to strings, objects
    JSON cannot hold to their ``str``, and a non-finite float ``f`` to ``nonfinite(f)``
    (by default the strings ``"nan"``, ``"inf"``, ``"-inf"``)."""
    if isinstance(x, dict):
        return {str(k): json_ready(v, nonfinite) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_ready(v, nonfinite) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        f = float(x)
        return f if math.isfinite(f) else nonfinite(f)
    if isinstance(x, np.ndarray):
        return json_ready(x.tolist(), nonfinite)
    if x is None or isinstance(x, str):
        return x
    return str(x)


def write_json(path: str, payload: dict, *, nonfinite=str) -> None:
    """Write ``payload`` to ``path`` atomically (temporary file, then rename).

    NaN and infinities become ``nonfinite(value)``, by default the strings ``"nan"``,
    ``"inf"``, ``"-inf"``, so the file is strict JSON; readers treat any non-number as
    missing.
    """
    path = os.path.abspath(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(json_ready(payload, nonfinite), f, indent=1, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)
