"""Fixtures several integration test files share (tests/conftest.py adds the
simulator's: sim, sim_tls, sim_factory).

    def test_a(fx): ...                 # the Authenticode signing fixtures (a directory), made once
    def test_b(published): ...          # a mirror published from the simulator (mirror_helper.Published)
    @pytest.mark.mirror_installer(seed=5, size=3 * 1024 * 1024)
    def test_c(published): ...          # ... of another installer (pytestmark for a whole file)
"""
import pytest

from authenticode_fixtures import MISSING_TOOLS, make_signing_fixtures


def pytest_configure(config):
    config.addinivalue_line("markers", "mirror_installer(seed, size): the installer the published fixture publishes")


@pytest.fixture(scope="session")
def fx(tmp_path_factory):
    """The directory tests/fixtures/make_signing_fixtures.sh fills (test PKI,
    signed PE and MSI files; its header lists them); the test is skipped
    when the tools that make them are missing."""
    if MISSING_TOOLS:
        pytest.skip("signing fixture tools missing: " + ", ".join(MISSING_TOOLS))
    return make_signing_fixtures(tmp_path_factory.mktemp("signing"))


@pytest.fixture
def published(tmp_path, sim, request):
    """A fleet mirror published from the simulator into tmp_path/mirror
    (mirror_helper.publish_mirror): a 200 KiB installer offered as V2 unless
    the test is marked mirror_installer(seed=..., size=...)."""
    from mirror_helper import publish_mirror  # cryptography: only where a mirror is signed

    marker = request.node.get_closest_marker("mirror_installer")
    return publish_mirror(tmp_path, sim, **(marker.kwargs if marker else {}))
