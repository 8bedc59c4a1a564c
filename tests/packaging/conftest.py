# SPDX-License-Identifier: MIT
"""The Debian packages as a user gets them: the .deb files of `make deb`
unpacked with dpkg -x into a scratch root (no chroot), for the tests here."""
import glob
import os
import shutil
import subprocess

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pytest_addoption(parser):
    parser.addoption("--debs", default=os.path.join(TOP, "build", "deb"),
                     help="directory holding the .deb files of make deb")


@pytest.fixture(scope="session")
def debs(request):
    """Package name -> .deb path (the -dbgsym packages left out)."""
    d = request.config.getoption("--debs")
    found = {}
    for path in sorted(glob.glob(os.path.join(d, "*.deb"))):
        name = os.path.basename(path).split("_")[0]
        if not name.endswith("-dbgsym"):
            found[name] = path
    if not found:
        pytest.fail(f"no .deb files in {d}: run make deb first")
    return found


@pytest.fixture(scope="session")
def root(debs, tmp_path_factory):
    """A scratch root with every package unpacked into it."""
    r = tmp_path_factory.mktemp("root")
    for path in debs.values():
        subprocess.run(["dpkg", "-x", path, str(r)], check=True)
    return r


@pytest.fixture(scope="session")
def multiarch():
    return subprocess.run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"], check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="session")
def libdir(root, multiarch):
    return root / "usr" / "lib" / multiarch


def need(tool):
    if shutil.which(tool) is None:
        pytest.fail(f"{tool} is missing: tools/install-deps.sh test installs it")
