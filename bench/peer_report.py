#!/usr/bin/env python3
"""The Python peer of `outpost report` in scripts/bench: a straightforward
client that follows the API document's worked example — one token (renewed
after 14 minutes), the incident list paged since a start time, for each
incident event-lineage then event-details with at most 50 ids per call,
calls paced to 10 per second, three attempts with doubling backoff plus
jitter on 429, 5xx and network errors. It does not share event ids between
incidents, keep a cursor or write anything atomically: that is the point of
the comparison.

    peer_report.py BASE_URL OUT_JSONL [--lookback-hours 24] [--page-size 1000] [--ca FILE]
Prints one JSON line: {"requests", "retries", "status_429", "incidents", "traced"}.
The API key comes from OUTPOST_API_KEY (never from argv).
"""
import argparse
import json
import os
import random
import sys
import time
from datetime import datetime, timedelta, timezone

import requests

PACE_S = 0.1            # 10 calls per second
ATTEMPTS = 3
BATCH = 50
RENEW_AFTER_S = 14 * 60


class Client:
    def __init__(self, base: str, key: str, verify):
        self.base = base.rstrip("/")
        self.key = key
        self.session = requests.Session()
        self.verify = verify  # per call: REQUESTS_CA_BUNDLE would override session.verify
        self.token = None
        self.token_at = 0.0
        self.last_call = 0.0
        self.requests = self.retries = self.status_429 = 0

    def _pace(self) -> None:
        wait = self.last_call + PACE_S - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self.last_call = time.monotonic()

    def _renew(self) -> None:
        self._pace()
        self.requests += 1
        reply = self.session.post(f"{self.base}/v2/auth/token/access",
                                  json={"refresh_token": self.key}, timeout=30,
                                  verify=self.verify)
        reply.raise_for_status()
        self.token = reply.json()["access_token"]
        self.token_at = time.monotonic()

    def post(self, route: str, body: dict) -> dict:
        if self.token is None or time.monotonic() - self.token_at > RENEW_AFTER_S:
            self._renew()
        for attempt in range(ATTEMPTS):
            self._pace()
            self.requests += 1
            try:
                reply = self.session.post(f"{self.base}{route}", json=body, timeout=30, verify=self.verify,
                                          headers={"Authorization": f"Bearer {self.token}"})
            except requests.RequestException:
                reply = None
            if reply is not None and reply.status_code == 429:
                self.status_429 += 1
            if reply is not None and reply.status_code < 400:
                return reply.json()
            if reply is not None and reply.status_code not in (429, 500, 502, 503):
                reply.raise_for_status()
            if attempt + 1 < ATTEMPTS:
                self.retries += 1
                time.sleep(2 ** attempt + random.random())
        raise RuntimeError(f"{route}: failed after {ATTEMPTS} attempts")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("base_url")
    parser.add_argument("out_jsonl")
    parser.add_argument("--lookback-hours", type=float, default=24)
    parser.add_argument("--page-size", type=int, default=1000)
    parser.add_argument("--ca")
    args = parser.parse_args()
    client = Client(args.base_url, os.environ.get("OUTPOST_API_KEY", ""), args.ca or True)
    start = datetime.now(timezone.utc) - timedelta(hours=args.lookback_hours)
    body = {"filter": {"start_time": start.strftime("%Y-%m-%dT%H:%M:%SZ")},
            "page_request": {"size": args.page_size, "sort_by": "trigger_time desc"}}
    incidents = []
    while True:
        page = client.post("/v2/incidents/list", body)
        incidents += page.get("resources") or []
        next_id = (page.get("page_response") or {}).get("next_id")
        if not next_id:
            break
        body = {"page_request": {"size": args.page_size, "id": next_id}}
    traced = 0
    with open(args.out_jsonl, "w", encoding="utf-8") as out:
        for incident in incidents:
            ends = incident.get("event_lineage_id") or {}
            start_id, end_id = ends.get("start_event_id"), ends.get("end_event_id")
            events = []
            if start_id and end_id:
                chain = client.post("/v2/event-lineage",
                                    {"start_event_id": start_id, "end_event_id": end_id})["resources"]
                for i in range(0, len(chain), BATCH):
                    events += client.post("/v2/event-details", {"ids": chain[i:i + BATCH]})["resources"]
                traced += 1
            out.write(json.dumps({"incident": incident, "events": events}) + "\n")
    print(json.dumps({"requests": client.requests, "retries": client.retries,
                      "status_429": client.status_429, "incidents": len(incidents), "traced": traced}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
