"""Shared pytest set-up: makes tests/sim importable and provides simulator
fixtures.

    def test_something(sim):          # plain HTTP simulator, fresh per test
    def test_other(sim_tls):          # HTTPS with a generated test CA
    @pytest.mark.sim_options(incidents=20, rate_limit=5)
    def test_third(sim): ...          # options passed to Sim.start
    def test_fourth(sim_factory):     # start any number: sim_factory(seed=2)
"""

import os
import sys

import pytest

SIM_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sim")
if SIM_DIR not in sys.path:
    sys.path.insert(0, SIM_DIR)

from simctl import Sim  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers",
                            "sim_options(**options): sim.py options for the sim fixtures")


def _marked_options(request) -> dict:
    marker = request.node.get_closest_marker("sim_options")
    return dict(marker.kwargs) if marker else {}


@pytest.fixture
def sim_factory():
    started = []

    def start(**options) -> Sim:
        instance = Sim.start(**options)
        started.append(instance)
        return instance

    yield start
    for instance in started:
        instance.stop()


@pytest.fixture
def sim(request):
    with Sim.start(**_marked_options(request)) as instance:
        yield instance


@pytest.fixture
def sim_tls(request):
    with Sim.start(tls=True, **_marked_options(request)) as instance:
        yield instance
