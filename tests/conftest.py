"""Shared test settings.

`pytest --update-fixtures` rewrites fixtures' expected.py / expected.diag from
the tool's current output, on purpose, so nobody edits them by hand.
"""

import os
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def pytest_configure(config):
    """`check` keeps results in a cache folder; tests (and the CLI runs they start)
    use a fresh one, never the user's."""
    os.environ.setdefault("TF1GRADFIX_CACHE_DIR", tempfile.mkdtemp(prefix="tf1gradfix-test-cache-"))
    if os.environ.get("PYTEST_XDIST_WORKER"):   # (`make test` runs tests in two processes: a cache each)
        os.environ["TF1GRADFIX_CACHE_DIR"] = tempfile.mkdtemp(prefix="tf1gradfix-test-cache-")
    from tf1gradfix import legacy

    legacy.STRICT = True   # (a legacy rule's error fails the test instead of giving no finding)


def pytest_addoption(parser):
    parser.addoption(
        "--update-fixtures",
        action="store_true",
        default=False,
        help="rewrite fixtures' expected outputs from the current tool output",
    )


@pytest.fixture
def update_fixtures(request) -> bool:
    return request.config.getoption("--update-fixtures")
