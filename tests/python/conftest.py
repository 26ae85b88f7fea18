"""Shared fixtures: the `weft` program beside the package, and a scratch folder."""
import os
import subprocess

import pytest


@pytest.fixture
def program():
    """Runs the `weft` program built with the package; returns the CompletedProcess."""
    path = os.environ.get("WEFT_PROGRAM")
    if not path or not os.path.exists(path):
        pytest.skip("the weft program is not built")

    def run(*args, check=True):
        r = subprocess.run([path] + [str(a) for a in args], capture_output=True, text=True)
        if check and r.returncode != 0:
            raise AssertionError("weft %s: exit %d\n%s" % (" ".join(map(str, args)), r.returncode, r.stderr))
        return r

    return run
