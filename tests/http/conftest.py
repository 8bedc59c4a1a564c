# SPDX-License-Identifier: MIT
"""pytest options of the baton-httpd tests: --httpd PATH (or $BATON_HTTPD)."""
import os

import pytest


def pytest_addoption(parser):
    parser.addoption("--httpd", default=os.environ.get("BATON_HTTPD"),
                     help="the baton-httpd binary to test")


@pytest.fixture(scope="session")
def httpd(request):
    path = request.config.getoption("--httpd")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("no baton-httpd binary: pass --httpd PATH or set BATON_HTTPD")
    return path
