"""Harbor's own ATIF models, to validate the trajectories `aam-eval export --atif` writes.

`harbor` on PyPI declares Python >= 3.12 and about a hundred dependencies, but its
`harbor.models.trajectories` package needs only pydantic. It is installed once, without its
dependencies, into a cache directory beside the agent CLIs' (`support/agent_clis.py`), and put
on `sys.path` for the test that uses it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from support.agent_clis import _locked, cache_root

HARBOR = "harbor==0.25.0"


class HarborSetupError(Exception):
    """Harbor could not be installed from the registry."""


def harbor_path() -> Path:
    """A directory holding the `harbor` package (installed once)."""
    target = cache_root().parent / "python" / HARBOR.replace("==", "-")
    with _locked(target.parent):
        if not (target / "harbor" / "models" / "trajectories" / "trajectory.py").exists():
            proc = subprocess.run(
                [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                 "--ignore-requires-python", "--target", str(target), HARBOR],
                capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
            )
            if proc.returncode != 0:
                raise HarborSetupError(f"pip install {HARBOR} failed:\n{proc.stderr[-2000:]}")
    return target


def trajectory_model() -> type:
    """`harbor.models.trajectories.Trajectory`."""
    path = str(harbor_path())
    if path not in sys.path:
        sys.path.append(path)
    from harbor.models.trajectories import Trajectory

    return Trajectory  # type: ignore[no-any-return]
