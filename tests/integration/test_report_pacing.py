"""How `outpost report` spends a short rate-limit budget (PRODUCT.md section 6
and the report target of section 7), read from the simulator's request log:
no 429, and a window's budget goes to the requests in the order they were
queued. The lineage calls of a page are queued before the event-details
calls they feed; while more of them wait than the window allows, a
details call must not take the budget from them, or the details calls pile
up for the last window, which then runs at one endpoint's 5-in-flight rate
instead of two."""

import pytest

from outpost_config import sim_config
from outpost_run import OUTPOST, outpost

pytestmark = pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN (the built outpost binary) is not set")

LIMIT = 10


@pytest.mark.sim_options(incidents=60, rate_limit=LIMIT, rate_window=1, latency_ms=30)
def test_details_calls_do_not_take_the_budget_of_waiting_lineage_calls(sim, tmp_path):
    path, _ = sim_config(tmp_path, sim, report={"page_size": 100, "details_batch": 30})
    result = outpost(path, "report", timeout=300)
    assert result.returncode == 0, result.stderr
    log = sim.log()
    assert log["summary"]["count_429"] == 0
    routes = [e["route"] for e in sorted(log["requests"], key=lambda e: e["start"])
              if e["route"] in ("lineage", "details")]
    assert routes.count("details") >= 2 and routes.count("lineage") > 3 * LIMIT
    lineage_after_first_details = routes[routes.index("details"):].count("lineage")
    # When the first details call starts, fewer lineage calls wait than the
    # window has left (< LIMIT); up to 5 that started with it may reach
    # the server after it.
    assert lineage_after_first_details < LIMIT + 5, routes
