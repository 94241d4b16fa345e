#!/usr/bin/env python3
"""outpost platform simulator: the server side of the Security Platform API v2.0.

What it is
----------
A second, independent implementation of the API described in
security-platform-api-v2.md (the only description of the real service), written
with the Python 3 standard library only, so that outpost's integration tests and
benchmarks can run the real binary against a faithful, scriptable server over
real HTTP or HTTPS on loopback. It serves:

  POST /v2/auth/token/access        API key -> short-lived access token
  POST /v2/incidents/list           filtered, sorted, paged incident list
  POST /v2/event-lineage            chain of event ids between two events
  POST /v2/event-details            event records by id (JSON body "ids")
  GET  /v2/event-details            same, ?ids=a,b,c&include_content=true
  GET  /v2/installer/windows/latest installer download (HEAD too)

every route also under the "/public" prefix (/public/v2/...). A second listener,
the "storage" host, serves the same installer when the installer route
redirects (--redirect), as a CDN or blob store would.

Starting it
-----------
    /usr/bin/python3 tests/sim/sim.py [--tls] [--port 0] [--seed 1] ...

It listens on 127.0.0.1 only and, once ready, prints ONE JSON line on stdout:

    {"port": N, "url": "https://localhost:N", "ca_file": "/tmp/.../ca.pem",
     "storage_port": M, "storage_url": "https://storage.localhost:M"}

(plain HTTP: "url": "http://127.0.0.1:N", "ca_file": null, "storage_url":
"http://127.0.0.1:M"). It runs until SIGTERM or SIGINT (or, with
--watch-stdin, until its stdin reaches end of file, so a crashed test runner
never leaves it behind). tests/sim/simctl.py wraps all of this for tests.

Defaults: seed 1, 200 incidents over the last 12 hours, API key "sim-api-key",
forbidden key "sim-forbidden-key", tokens valid 900 s, 60 requests per 60 s per
API key, 5 requests in flight per endpoint, installer version
"26.01.03.24329-0de7ab+" named SensorSetup.exe (a deterministic 256 KiB fake
PE file unless --installer FILE), validators, HEAD and Range on, no redirect.
Run with --help for every option; each can also be changed at run time through
POST /_sim/config.

Control API (no authentication; on the main listener; never logged, never
faulted, never rate limited)
------------------------------------------------------------------------
  GET    /_sim/log            {"requests": [entry...], "summary": {...}}
         entry: seq, listener ("api"|"storage"), connection (id of the TCP
         connection), connection_request (1 for its first request), start, end
         (Unix time, float), method, path (with query), route, status (0 if the
         connection was reset before a status line), bytes_sent (body bytes),
         range, if_range, authorization (true/false: whether the header was
         present; its value is never recorded), fault (kind or null), aborted,
         and in_progress (true for a request still running: a stall, the
         latency, a long download). A failed TLS handshake is an entry with
         tls_error. The log waits up to 2 s for answers whose last bytes are
         being sent, so a request answered before GET /_sim/log is in it.
         summary: total, by_route, by_status, count_429, max_concurrency
         (most requests in flight at once per endpoint, those being refused
         for it included: what the client did), max_admitted (most holding a
         slot), concurrency_rejected, tokens_issued, tls_handshake_failures.
  POST   /_sim/log/clear      forget the log and the concurrency maxima
  GET    /_sim/faults         the fault plan with seen/applied counters
  POST   /_sim/faults         add a fault: {"route": R, "kind": K, "count": 1,
                              "after": 0, ...parameters}; or {"faults": [...]}
  DELETE /_sim/faults         clear the fault plan
  GET    /_sim/config         current settings
  POST   /_sim/config         change settings: {"rate_limit": 10, ...}; the keys
                              are the fields of class Settings (as GET
                              /_sim/config shows them) plus
                              "missing_events" (list of ids) and
                              "missing_fraction" (float)
  POST   /_sim/incidents/add  {"count": n, "trigger_time": ISO (optional,
                              default now), "fields": {member: value}
                              (optional: served members replaced, e.g. a
                              policy name with a pipe or a backslash)}
                              -> {"added": [ids], "total": N}
  POST   /_sim/tokens/expire  expire every issued token -> {"expired": n}
  GET    /_sim/dataset        the whole data set: {"seed", "reference_time",
                              "span_hours", "chain_max", "incidents": [{"incident": as
                              served, "hidden": {policy_severity,
                              resolution_status, dataset_sensitivity,
                              lineage_kind, traceable, chain, host,
                              ai_summary}}], "events": [...],
                              "missing_event_ids": [...]}
  GET    /_sim/installer      {"path", "size", "sha256", "version", "name",
                              "etag", "last_modified"}

Fault injection
---------------
Routes: token, incidents, lineage, details, installer, storage. A fault applies
to the next `count` requests of its route (-1: every one) after skipping the
first `after`; each fault counts the requests of its route from when it was
added; when several faults match, the oldest wins. Kinds and parameters:

  status          status (default 503; any 4xx/5xx), retry_after (seconds or
                  any string; absent = no Retry-After header). Envelope body.
  reset           bytes (body bytes sent before the reset; default half; 0 =
                  right after the headers; -1 = before any response): then the
                  TCP connection is reset (SO_LINGER 0).
  truncate        bytes (default half): full Content-Length, part of the body,
                  then the connection is closed.
  stall           bytes (default half), seconds (default 2), then ("close" |
                  "continue", default "close").
  wrong_length    extra (default 1024): Content-Length is larger than the body
                  by `extra`; the whole body is sent, then the connection closes.
  corrupt         offset (default the middle of the body; for installer/storage
                  an absolute offset in the file, default its middle), mask
                  (XOR, default 0xFF): one byte flipped.
  malformed_json  the JSON body is cut in half (still Content-Type JSON).
  wrong_types     variant: resources_object (default), size_string,
                  errors_object, risk_score_string, trigger_time_number,
                  lineage_id_string, next_id_number, total_string,
                  ids_numbers, event_fields, access_token_number.
  repeat_next_id  incidents: a page requested with a page token answers with
                  that same token as next_id (paging never ends).
  html_200        an HTML error page with status 200 and text/html.
  expire_token    the bearer token of the request is expired from then on (401).
  forbidden       403 for that request.

Choices made where the API document is silent
---------------------------------------------
- Token answer: {"access_token", "token_type": "Bearer", "expires_in"} at the
  top level AND the standard envelope around the same object
  (token_shape "both"; "flat" and "envelope" give one form only).
- Token exchanges are not counted against the rate limit, but carry the key's
  X-RateLimit-* headers. Every other request with a valid token counts (403s
  included), except the ones the limiter refuses and those refused earlier
  for concurrency (checked before authentication).
  A key's fixed window opens at its first counted request and lasts
  rate_window seconds; X-RateLimit-Reset is its end (ceil, Unix seconds),
  Retry-After the whole seconds left (at least 1). Responses to requests
  without a valid token carry no rate headers. rate_limit 0 disables the
  limiter and its headers; rate_headers false keeps limiting but hides them.
- Concurrency is per route (token, incidents, lineage, details, installer);
  a request over the limit gets 429 with Retry-After: 1 without waiting for
  latency_ms. latency_ms is slept by admitted API requests before answering
  (not by the control API nor the storage listener).
- Faults "status" and "html_200" answer before authentication, as a gateway
  would (no rate headers, nothing counted); the others act on the real answer.
- Incident list: sorted by (trigger_time, id), ascending by default, and the
  exact reverse for "trigger_time desc"; any other sort field is 400. A page
  token holds the filter, the order, the number of incidents that existed when
  the first page was asked (the snapshot) and the offset, signed: paging never
  shows incidents added later and never repeats or skips one; `total` counts
  the snapshot. A request with a token may omit filter and sort_by; if it
  carries them they must equal the token's (else 400). Empty filter lists mean
  "no constraint"; unknown filter fields are ignored; start_time keeps
  trigger_time >= start_time. The last page has next_id "" (next_id_style
  "empty"; "null" and "absent" are the alternatives). size must be an integer
  1..1000 (default 50). POST bodies need Content-Type application/json and a
  JSON object (an empty body is 400).
- include_ai_summaries adds a string field "ai_summary" to every incident.
- Lineage answers only for pairs that are the two ends of some incident's chain
  (served or hidden); otherwise 404. Details answer in request order without
  duplicates, silently leaving out unknown and "missing" ids (~1% of the events
  of traceable chains, chosen deterministically from the seed); more than
  max_detail_ids (1000) ids is 400; include_content adds
  source.content.excerpt where source.content exists.
- Installer: strong ETag from path, size, mtime and version; Last-Modified the
  file's mtime; If-None-Match/If-Modified-Since give 304; a multi-range Range
  or a malformed one is ignored (200); a Range with an If-Range that matches
  neither validator gives 200. With --redirect the installer route answers
  302 to {storage_url}/installer/windows/<name>?sig=...; X-Installer-Version is
  on the redirect and on the storage answer (redirect_version_header "both";
  or only "redirect" or only "storage"). The redirect_to setting (run time
  only) sends the 302 to another origin instead, e.g. a plain-HTTP
  simulator's storage listener.
- Routes are matched exactly ("//v2/..." or a trailing "/" is 404); other
  methods on a known route are 405 with Allow. Storage paths: /installer/...
- Incidents have trigger times in whole seconds in [reference - span,
  reference]; the reference time is the start time rounded down to the second
  (or --reference-time). Incidents added at run time trigger "now".
"""

from __future__ import annotations

import argparse
import base64
import bisect
import copy
import hashlib
import hmac
import http.server
import json
import math
import os
import random
import secrets
import shutil
import signal
import socket
import socketserver
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime
from email.utils import formatdate, parsedate_to_datetime
from urllib.parse import parse_qs, quote

ROUTE_NAMES = ("token", "incidents", "lineage", "details", "installer", "storage")
MAX_REQUEST_BODY = 8 * 1024 * 1024
CHUNK = 256 * 1024


# ---------------------------------------------------------------------------
# Small helpers


def iso_utc(epoch: float) -> str:
    """ISO 8601 UTC in the API's form, YYYY-MM-DDThh:mm:ssZ."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(epoch)))


def parse_iso_utc(text) -> float:
    """Unix time of an ISO 8601 timestamp that names its time zone."""
    if not isinstance(text, str) or "T" not in text:
        raise ValueError(f"not an ISO 8601 timestamp: {text!r}")
    value = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError(f"timestamp without a time zone: {text!r}")
    return parsed.timestamp()


def http_date(epoch: float) -> str:
    return formatdate(epoch, usegmt=True)


def json_bytes(document) -> bytes:
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def seeded_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


# ---------------------------------------------------------------------------
# Settings (everything POST /_sim/config may change)

CHOICES = {
    "token_shape": ("both", "flat", "envelope"),
    "next_id_style": ("empty", "absent", "null"),
    "redirect_version_header": ("both", "redirect", "storage"),
}
OPTIONAL_STRINGS = ("installer", "installer_disposition", "redirect_to")


@dataclass
class Settings:
    api_keys: list = field(default_factory=lambda: ["sim-api-key"])
    forbidden_keys: list = field(default_factory=lambda: ["sim-forbidden-key"])
    token_lifetime: float = 900.0      # seconds an access token lives
    token_shape: str = "both"          # token answer: both | flat | envelope
    rate_limit: int = 60               # requests per window per key; 0 = off
    rate_window: float = 60.0          # seconds
    rate_headers: bool = True          # send X-RateLimit-* headers
    max_concurrency: int = 5           # requests in flight per route; 0 = off
    latency_ms: float = 0.0            # added to every admitted API request
    installer: str | None = None       # file served; None = generated fake
    installer_version: str = "26.01.03.24329-0de7ab+"
    installer_name: str = "SensorSetup.exe"
    installer_disposition: str | None = None  # raw Content-Disposition
    validators: bool = True            # ETag / Last-Modified
    head: bool = True                  # HEAD allowed on the installer
    range: bool = True                 # Range honoured
    redirect: bool = False             # installer route -> 302 to storage
    redirect_to: str | None = None     # with redirect: this origin instead of the storage
                                       # listener (e.g. another simulator's storage_url)
    redirect_version_header: str = "both"
    type_variant: bool = False         # vendor-style envelope "type" values
    next_id_style: str = "empty"       # last page: empty | absent | null
    default_page_size: int = 50
    max_page_size: int = 1000
    max_detail_ids: int = 1000

    def copy(self) -> "Settings":
        return Settings(**asdict(self))      # asdict copies the lists too

    def update(self, changes: dict) -> None:
        """Validate every change first, then apply them all (ValueError)."""
        defaults = Settings()
        checked = {}
        for name, value in changes.items():
            if not hasattr(defaults, name):
                raise ValueError(f"unknown setting {name!r}")
            checked[name] = _check_setting(name, value, getattr(defaults, name))
        for name, value in checked.items():
            setattr(self, name, value)


def _check_setting(name: str, value, default):
    if name in OPTIONAL_STRINGS:
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{name} must be a string or null")
        return value
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
        value = float(value) if ok else value
    elif isinstance(default, list):
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    else:
        ok = isinstance(value, str) and value in CHOICES.get(name, (value,))
    if not ok:
        raise ValueError(f"bad value for {name}: {value!r}")
    return value


# ---------------------------------------------------------------------------
# Deterministic data set

HOSTS = ("WS-FIN-0142", "WS-ENG-0007", "LT-SALES-0311", "LT-HR-0023", "SRV-FILE-01",
         "WS-LEGAL-0090", "LT-EXEC-0001", "VDI-POOL-0456", "WS-OPS-0815", "LT-DEV-1337")
USERS = tuple((name, f"S-1-5-21-3623811015-3361044348-30300820-{1104 + i}") for i, name in
              enumerate(("alice.martin", "zoë", "józef.nowak", "chen.wei", "maría.garcía",
                         "bob", "svc_backup", "o'connor", "dmitri.ivanov", "admin")))
POLICIES = (("PCI – card numbers", "critical"), ("Source code exfiltration", "high"),
            ("HR records", "high"), ("Customer PII (GDPR)", "critical"),
            ("Large USB transfer", "medium"), ("Personal webmail", "low"),
            ("Unsanctioned cloud storage", "medium"), ("Données clients – export", "high"))
DATASETS = (("Cardholder data", "critical"), ("Source repositories", "high"),
            ("Employee records", "high"), ("Marketing assets", "low"),
            ("Finance reports", "medium"), ("顧客データ", "critical"))
RESOLUTIONS = ("open", "open", "open", "open", "in_progress", "resolved", "dismissed")
AI_SEVERITIES = ("low", "medium", "high", "critical")
ACTION_KINDS = ("file_copy", "file_move", "file_upload", "email_send", "web_upload",
                "usb_copy", "print", "clipboard_copy", "cloud_sync")
SENSOR_KINDS = ("endpoint_agent", "network_proxy", "email_gateway", "browser_extension")
FILE_NAMES = ("Résumé – 2026.docx", "Q3 forecast.xlsx", "customers_export.csv",
              "données_clients.csv", "设计文档.pdf", "passwords.txt", "📊 board deck.pptx",
              "id_rsa", "payroll 2026-11.xlsx", "Ünïcødé notes.md", "архив.zip",
              "contract (signed).pdf")
DIRECTORIES = ("C:\\Users\\{user}\\Documents\\", "C:\\Users\\zoë\\文档\\",
               "D:\\Shares\\Finance\\", "C:\\Users\\{user}\\Desktop\\",
               "\\\\fileserver\\projets\\été\\", "/home/{user}/src/")
DESTINATION_DIRS = ("E:\\", "F:\\backup\\", "C:\\Users\\{user}\\OneDrive\\", "\\\\nas01\\drop\\")
DOMAINS = ("drive.google.com", "dropbox.com", "wetransfer.com", "mega.nz", "pastebin.com",
           "github.com", "xn--bcher-kva.example", "mail.yandex.ru")
TAGS = ("PII", "PCI", "source_code", "confidential", "GDPR", "financial", "credentials", "HR")
RECIPIENTS = ("partner@example.com", "jürgen@müller.example", "me.private@gmail.com",
              "finance@competitor.example", "zoë@example.org")
SUBJECTS = ("Q3 numbers – confidential", "Fwd: Résumé", "契約書", "RE: payroll", "")
# Lineage shapes: "full" and "single" can be traced, the others cannot.
SPECIAL_LINEAGE = ("absent", "start_only", "end_only", "empty_start", "empty_end", "null",
                   "empty_object", "null_end", "single")
LINEAGE_WEIGHTS = (("full", 84), ("absent", 4), ("start_only", 2), ("end_only", 2),
                   ("empty_start", 2), ("empty_end", 2), ("null", 1), ("empty_object", 1),
                   ("null_end", 1), ("single", 1))
TRACEABLE = ("full", "single")
_ABSENT = object()


@dataclass
class Storyline:
    """One user's stream of events, mostly on one host; chains are slices."""
    host: str
    user: str
    user_id: str
    event_ids: list = field(default_factory=list)
    times: list = field(default_factory=list)


@dataclass
class IncidentRecord:
    served: dict     # the incident as the list answers it
    hidden: dict     # attributes the filters use, the chain, ...
    epoch: int       # trigger time

    @property
    def id(self) -> str:
        return self.served["id"]

    def view(self, include_ai_summary: bool) -> dict:
        if not include_ai_summary:
            return self.served
        return dict(self.served, ai_summary=self.hidden["ai_summary"])


class Dataset:
    """Incidents, events and lineage chains, generated from a seed.

    Events live on storylines (one per host/user pair), each a chronological
    stream spanning the incident period plus a six-hour lookback. An incident's
    chain is the slice of a storyline that ends at its last event at or before
    the trigger time, 1..chain_max events long (default 40: mean about 20;
    the mean is half of chain_max), so incidents close in time on one
    storyline share most of their events.
    """

    LOOKBACK_S = 6 * 3600

    def __init__(self, seed: int, count: int, span_hours: float, reference_time: int,
                 missing_fraction: float = 0.01, chain_max: int = 40):
        self.seed = seed
        self.chain_max = chain_max
        self.span_s = int(span_hours * 3600)
        self.reference = int(reference_time)
        self.events: dict[str, dict] = {}
        self.storylines: list[Storyline] = []
        self.incidents: list[IncidentRecord] = []
        self.chains: dict[tuple, list] = {}
        self.missing: frozenset = frozenset()
        self.added = 0
        self._lock = threading.Lock()
        rng = random.Random(seed)
        self._make_storylines(rng, count)
        self._make_incidents(rng, count)
        self.set_missing_fraction(missing_fraction)

    # -- generation --------------------------------------------------------

    def _make_storylines(self, rng: random.Random, count: int) -> None:
        lines = max(2, min(len(HOSTS) * len(USERS), math.ceil(count / 20)))
        first = self.reference - self.span_s - self.LOOKBACK_S
        for index in range(lines):
            user, user_id = USERS[(index + index // len(HOSTS)) % len(USERS)]
            line = Storyline(HOSTS[index % len(HOSTS)], user, user_id)
            moment = first + rng.randint(0, 600)
            while moment <= self.reference:
                event = self._make_event(rng, line, moment)
                self.events[event["id"]] = event
                line.event_ids.append(event["id"])
                line.times.append(moment)
                moment += 0 if rng.random() < 0.05 else rng.randint(10, 900)
            self.storylines.append(line)

    def _make_event(self, rng: random.Random, line: Storyline, moment: int) -> dict:
        kind = rng.choice(ACTION_KINDS)
        action = {"kind": kind}
        if rng.random() < 0.85:
            action["blocked"] = rng.random() < 0.25
        if rng.random() < 0.85:
            big = rng.random() < 0.03
            action["data_size"] = rng.randint(2**32, 2**36) if big else rng.randint(0, 50_000_000)
        action["hostname"] = line.host if rng.random() < 0.8 else rng.choice(HOSTS)
        action["sensor_kind"] = rng.choice(SENSOR_KINDS)
        event = {"id": seeded_uuid(rng), "timestamp": iso_utc(moment), "action": action,
                 "user": {"local_username": line.user, "id": line.user_id}}
        source = self._make_source(rng, line)
        if source is not None:
            event["source"] = source
        destination = self._make_destination(rng, line, kind)
        if destination is not None:
            event["destination"] = destination
        if rng.random() < 0.1:
            event["classification"] = "classification_unspecified"
            event["x_sim_trace"] = {"span": rng.getrandbits(32), "sampled": True}
        return event

    @staticmethod
    def _make_source(rng: random.Random, line: Storyline) -> dict | None:
        if rng.random() < 0.1:
            return None
        source = {}
        name = rng.choice(FILE_NAMES)
        if rng.random() < 0.9:
            source["file"] = {"name": name}
        if rng.random() < 0.85:
            source["local_file"] = {"path": rng.choice(DIRECTORIES).format(user=line.user) + name}
        if rng.random() < 0.8:
            source["content"] = {"tags": rng.sample(TAGS, rng.randint(0, 3))}
        return source

    @staticmethod
    def _make_destination(rng: random.Random, line: Storyline, kind: str) -> dict | None:
        if kind in ("print", "clipboard_copy") or rng.random() < 0.1:
            return None
        if kind == "email_send":
            email = {}
            if rng.random() < 0.9:
                email["to"] = rng.sample(RECIPIENTS, rng.randint(0, 3))
            if rng.random() < 0.9:
                email["subject"] = rng.choice(SUBJECTS)
            return {"email": email}
        if kind in ("web_upload", "cloud_sync", "file_upload"):
            domain = rng.choice(DOMAINS)
            web = {"domain": domain}
            if rng.random() < 0.9:
                web["url"] = f"https://{domain}/upload/{rng.getrandbits(48):012x}?n=%C3%A9t%C3%A9"
            return {"web": web}
        name = rng.choice(FILE_NAMES)
        destination = {"file": {"name": name}}
        if rng.random() < 0.8:
            destination["local_file"] = {
                "path": rng.choice(DESTINATION_DIRS).format(user=line.user) + name}
        return destination

    def _make_incidents(self, rng: random.Random, count: int) -> None:
        previous = None
        for index in range(count):
            if previous is not None and rng.random() < 0.05:
                trigger = previous          # some incidents share a trigger time
            else:
                trigger = self.reference - rng.randint(0, self.span_s)
            kind = SPECIAL_LINEAGE[index] if index < len(SPECIAL_LINEAGE) else _weighted(rng)
            record = self._make_incident(rng, trigger, kind, unspecified=index == 1,
                                         extra=index == 2)
            self.incidents.append(record)
            previous = trigger

    def _make_incident(self, rng: random.Random, trigger: int, kind: str,
                       unspecified: bool = False, extra: bool = False) -> IncidentRecord:
        line = rng.choice(self.storylines)
        end = bisect.bisect_right(line.times, trigger) - 1
        # gauss(20, 9) capped at 40 by default; longer chains scale alike.
        top = self.chain_max
        length = 1 if kind == "single" else min(top, max(1, round(rng.gauss(top / 2, top * 9 / 40))))
        chain = line.event_ids[max(0, end - length + 1):end + 1] if end >= 0 else []
        if not chain:
            kind = "absent"
        policy, severity = rng.choice(POLICIES)
        dataset, sensitivity = rng.choice(DATASETS)
        risk = round(rng.uniform(0, 100), 1) if rng.random() < 0.6 else rng.randint(0, 100)
        ai = rng.choice(AI_SEVERITIES)
        if unspecified or rng.random() < 0.12:
            ai = "severity_unspecified"
        served = {
            "id": seeded_uuid(rng),
            "user": {"local_username": line.user},
            "policy": {"name": policy},
            "dataset": {"name": dataset},
            "trigger_time": iso_utc(trigger),
            "risk_score": risk,
            "blocked": rng.random() < 0.3,
            "ai_severity": ai,
            "created_by": "policy" if rng.random() < 0.75 else "ai",
        }
        lineage = _lineage_value(kind, chain)
        if lineage is not _ABSENT:
            served["event_lineage_id"] = lineage
        if extra or rng.random() < 0.1:
            labels = ["exfiltration", "insider", "after-hours", "new-device"]
            served["labels"] = rng.sample(labels, 2)
            served["tenant_region"] = "eu-west-1"
            served["x_sim_extension"] = {"schema": 3, "notes": None}
        hidden = {
            "policy_severity": severity,
            "resolution_status": rng.choice(RESOLUTIONS),
            "dataset_sensitivity": sensitivity,
            "lineage_kind": kind,
            "traceable": kind in TRACEABLE,
            "chain": chain,
            "host": line.host,
            "ai_summary": f"{line.user} moved “{dataset}” data on {line.host}; "
                          f"policy “{policy}” matched.",
        }
        if chain:
            self.chains.setdefault((chain[0], chain[-1]), chain)
        return IncidentRecord(served, hidden, trigger)

    # -- run-time changes --------------------------------------------------

    def add_incidents(self, count: int, trigger: int | None = None, fields: dict | None = None) -> list[str]:
        """Append incidents triggered now (or at `trigger`), deterministic
        from the seed and a counter, on the existing storylines; `fields`
        replace members of what is served."""
        added = []
        with self._lock:
            for _ in range(count):
                self.added += 1
                rng = random.Random(f"{self.seed}:added:{self.added}")
                moment = int(time.time()) if trigger is None else int(trigger)
                record = self._make_incident(rng, moment, _weighted(rng))
                record.served.update(copy.deepcopy(fields or {}))
                self.incidents.append(record)
                added.append(record.id)
        return added

    def set_missing_fraction(self, fraction: float) -> None:
        """Hide about `fraction` of the events of traceable chains from
        event-details (at least one when fraction > 0), chosen by seed."""
        candidates = list(dict.fromkeys(
            event_id for record in self.incidents if record.hidden["traceable"]
            for event_id in record.hidden["chain"]))
        if fraction <= 0 or not candidates:
            self.missing = frozenset()
            return
        wanted = max(1, round(fraction * len(candidates)))
        def rank(event_id):
            return hashlib.sha256(f"{self.seed}:{event_id}".encode()).digest()
        ranked = sorted(candidates, key=rank)
        self.missing = frozenset(ranked[:wanted])

    def set_missing(self, event_ids: list[str]) -> None:
        self.missing = frozenset(event_ids)

    # -- queries -----------------------------------------------------------

    def count(self) -> int:
        with self._lock:
            return len(self.incidents)

    def page(self, incident_filter: "IncidentFilter", descending: bool, snapshot: int,
             offset: int, size: int) -> tuple[list[IncidentRecord], int]:
        with self._lock:
            candidates = self.incidents[:snapshot]
        matched = [r for r in candidates if incident_filter.matches(r)]
        matched.sort(key=lambda r: (r.epoch, r.id), reverse=descending)
        return matched[offset:offset + size], len(matched)

    def lineage(self, start: str, end: str) -> list[str]:
        unknown = [e for e in (start, end) if e not in self.events]
        if unknown:
            raise LookupError(f"unknown event id {unknown[0]!r}")
        with self._lock:
            chain = self.chains.get((start, end))
        if chain is None:
            raise LookupError("no event lineage is known between these two events")
        return list(chain)

    def details(self, event_ids: list[str], include_content: bool) -> list[dict]:
        found = []
        missing = self.missing
        for event_id in dict.fromkeys(event_ids):
            event = self.events.get(event_id)
            if event is None or event_id in missing:
                continue
            found.append(_with_content(event) if include_content else event)
        return found

    def to_json(self) -> dict:
        with self._lock:
            incidents = [{"incident": r.served, "hidden": r.hidden} for r in self.incidents]
        return {
            "seed": self.seed,
            "reference_time": iso_utc(self.reference),
            "span_hours": self.span_s / 3600,
            "chain_max": self.chain_max,
            "incidents": incidents,
            "events": list(self.events.values()),
            "missing_event_ids": sorted(self.missing),
        }


def _weighted(rng: random.Random) -> str:
    kinds, weights = zip(*LINEAGE_WEIGHTS)
    return rng.choices(kinds, weights)[0]


def _lineage_value(kind: str, chain: list):
    first, last = (chain[0], chain[-1]) if chain else (None, None)
    return {
        "full": {"start_event_id": first, "end_event_id": last},
        "single": {"start_event_id": first, "end_event_id": last},
        "absent": _ABSENT,
        "null": None,
        "empty_object": {},
        "start_only": {"start_event_id": first},
        "end_only": {"end_event_id": last},
        "empty_start": {"start_event_id": "", "end_event_id": last},
        "empty_end": {"start_event_id": first, "end_event_id": ""},
        "null_end": {"start_event_id": first, "end_event_id": None},
    }[kind]


def _with_content(event: dict) -> dict:
    content = event.get("source", {}).get("content")
    if content is None:
        return event
    enriched = copy.deepcopy(event)
    enriched["source"]["content"]["excerpt"] = f"…content matched in event {event['id'][:8]}…"
    return enriched


# ---------------------------------------------------------------------------
# Incident filter and page tokens

FILTER_LISTS = {"policy_severities": "policy_severity",
                "resolution_statuses": "resolution_status",
                "created_by": "created_by",
                "dataset_sensitivities": "dataset_sensitivity"}


@dataclass
class IncidentFilter:
    start_time: float | None = None
    values: dict = field(default_factory=dict)   # list name -> sorted values

    @classmethod
    def parse(cls, document) -> "IncidentFilter":
        if document is None:
            return cls()
        if not isinstance(document, dict):
            raise ValueError("must be an object")
        start = document.get("start_time")
        if start is not None:
            try:
                start = parse_iso_utc(start)
            except ValueError as err:
                raise ValueError(f"start_time: {err}") from None
        values = {}
        for name in FILTER_LISTS:
            given = document.get(name)
            if given is None:
                continue
            if not isinstance(given, list) or not all(isinstance(v, str) for v in given):
                raise ValueError(f"{name} must be an array of strings")
            if given:
                values[name] = sorted(set(given))
        return cls(start, values)

    def to_json(self) -> dict:
        return {"start_time": self.start_time, "values": self.values}

    @classmethod
    def from_json(cls, document: dict) -> "IncidentFilter":
        return cls(document["start_time"], document["values"])

    def matches(self, record: IncidentRecord) -> bool:
        if self.start_time is not None and record.epoch < self.start_time:
            return False
        for name, wanted in self.values.items():
            attribute = FILTER_LISTS[name]
            source = record.served if attribute == "created_by" else record.hidden
            actual = source[attribute]
            if actual not in wanted:
                return False
        return True


class PageTokens:
    """Opaque, signed next-page tokens carrying the paging state."""

    def __init__(self, secret: bytes):
        self._secret = secret

    def encode(self, state: dict) -> str:
        raw = json.dumps(state, sort_keys=True, separators=(",", ":")).encode()
        mac = hmac.new(self._secret, raw, "sha256").digest()[:12]
        return base64.urlsafe_b64encode(mac + raw).decode().rstrip("=")

    def decode(self, token: str) -> dict:
        try:
            blob = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except (ValueError, TypeError):
            raise ValueError("page token is not valid") from None
        mac, raw = blob[:12], blob[12:]
        if not hmac.compare_digest(mac, hmac.new(self._secret, raw, "sha256").digest()[:12]):
            raise ValueError("page token is not valid")
        return json.loads(raw)


# ---------------------------------------------------------------------------
# Access tokens, rate limiting, concurrency


@dataclass
class AccessToken:
    key: str
    expires_at: float
    revoked: bool = False

    def valid(self, now: float) -> bool:
        return not self.revoked and now < self.expires_at


class TokenStore:
    def __init__(self):
        self._lock = threading.Lock()
        self._tokens: dict[str, AccessToken] = {}

    def issue(self, key: str, lifetime: float) -> str:
        token = "sim_" + secrets.token_urlsafe(32)
        with self._lock:
            self._tokens[token] = AccessToken(key, time.time() + lifetime)
        return token

    def lookup(self, token: str) -> AccessToken | None:
        with self._lock:
            return self._tokens.get(token)

    def expire(self, token: str) -> None:
        with self._lock:
            if token in self._tokens:
                self._tokens[token].revoked = True

    def expire_all(self) -> int:
        with self._lock:
            live = [t for t in self._tokens.values() if t.valid(time.time())]
            for entry in live:
                entry.revoked = True
            return len(live)

    def issued(self) -> int:
        with self._lock:
            return len(self._tokens)


@dataclass
class RateState:
    allowed: bool
    remaining: int
    reset_at: float
    limit: int

    def headers(self) -> list:
        return [("X-RateLimit-Limit", str(self.limit)),
                ("X-RateLimit-Remaining", str(self.remaining)),
                ("X-RateLimit-Reset", str(math.ceil(self.reset_at)))]

    def retry_after(self) -> int:
        return max(1, math.ceil(self.reset_at - time.time()))


class RateLimiter:
    """Fixed windows per API key; a window opens at the key's first counted
    request after the previous one ended."""

    def __init__(self):
        self._lock = threading.Lock()
        self._windows: dict[str, list] = {}   # key -> [opened_at, used]

    def consume(self, key: str, limit: int, window: float) -> RateState:
        now = time.time()
        with self._lock:
            current = self._windows.get(key)
            if current is None or now >= current[0] + window:
                current = self._windows[key] = [now, 0]
            if current[1] >= limit:
                return RateState(False, 0, current[0] + window, limit)
            current[1] += 1
            return RateState(True, limit - current[1], current[0] + window, limit)

    def peek(self, key: str, limit: int, window: float) -> RateState:
        now = time.time()
        with self._lock:
            current = self._windows.get(key)
            if current is None or now >= current[0] + window:
                return RateState(True, limit, now + window, limit)
            return RateState(True, max(0, limit - current[1]), current[0] + window, limit)

    def reset(self) -> None:
        with self._lock:
            self._windows.clear()


class ConcurrencyGate:
    """Requests in flight per route, with the maxima seen. A request is in
    flight from when its headers are read until its answer is sent; the ones
    refused for being over the limit count too (max_seen shows what the client
    did), but only admitted ones take a slot (max_admitted)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._in_flight: dict[str, int] = {}     # admitted and refused
        self._admitted: dict[str, int] = {}
        self.max_seen: dict[str, int] = {}
        self.max_admitted: dict[str, int] = {}
        self.rejected: dict[str, int] = {}

    def enter(self, route: str, limit: int) -> bool:
        """Count a request in; False if it is over the limit. Either way
        leave(route, admitted) must follow."""
        with self._lock:
            busy = self._in_flight[route] = self._in_flight.get(route, 0) + 1
            self.max_seen[route] = max(self.max_seen.get(route, 0), busy)
            admitted = self._admitted.get(route, 0)
            if limit and admitted >= limit:
                self.rejected[route] = self.rejected.get(route, 0) + 1
                return False
            self._admitted[route] = admitted + 1
            self.max_admitted[route] = max(self.max_admitted.get(route, 0), admitted + 1)
            return True

    def leave(self, route: str, admitted: bool) -> None:
        with self._lock:
            self._in_flight[route] -= 1
            if admitted:
                self._admitted[route] -= 1

    def stats(self) -> dict:
        with self._lock:
            return {"max_concurrency": dict(self.max_seen),
                    "max_admitted": dict(self.max_admitted),
                    "concurrency_rejected": dict(self.rejected)}

    def reset_stats(self) -> None:
        with self._lock:
            self.max_seen.clear()
            self.max_admitted.clear()
            self.rejected.clear()


# ---------------------------------------------------------------------------
# Faults

FAULT_PARAMS = {
    "status": {"status": 503, "retry_after": None},
    "reset": {"bytes": None},
    "truncate": {"bytes": None},
    "stall": {"bytes": None, "seconds": 2.0, "then": "close"},
    "wrong_length": {"extra": 1024},
    "corrupt": {"offset": None, "mask": 0xFF},
    "malformed_json": {},
    "wrong_types": {"variant": "resources_object"},
    "repeat_next_id": {},
    "html_200": {},
    "expire_token": {},
    "forbidden": {},
}
WRONG_TYPE_VARIANTS = ("resources_object", "size_string", "errors_object", "risk_score_string",
                       "trigger_time_number", "lineage_id_string", "next_id_number",
                       "total_string", "ids_numbers", "event_fields", "access_token_number")


@dataclass
class Fault:
    id: int
    route: str
    kind: str
    count: int       # requests to fault; -1 = all
    after: int       # matching requests to let through first
    params: dict
    seen: int = 0
    applied: int = 0

    @classmethod
    def from_spec(cls, fault_id: int, spec: dict) -> "Fault":
        if not isinstance(spec, dict):
            raise ValueError("a fault is a JSON object")
        spec = dict(spec)
        route, kind = spec.pop("route", None), spec.pop("kind", None)
        if route not in ROUTE_NAMES:
            raise ValueError(f"route must be one of {', '.join(ROUTE_NAMES)}")
        if kind not in FAULT_PARAMS:
            raise ValueError(f"kind must be one of {', '.join(FAULT_PARAMS)}")
        count, after = spec.pop("count", 1), spec.pop("after", 0)
        if not _is_int(count) or count == 0 or count < -1:
            raise ValueError("count must be a positive integer or -1")
        if not _is_int(after) or after < 0:
            raise ValueError("after must be a non-negative integer")
        unknown = set(spec) - set(FAULT_PARAMS[kind])
        if unknown:
            raise ValueError(f"unknown parameter(s) for {kind}: {', '.join(sorted(unknown))}")
        params = dict(FAULT_PARAMS[kind], **spec)
        _check_fault_params(kind, params)
        return cls(fault_id, route, kind, count, after, params)

    def describe(self) -> dict:
        return {"id": self.id, "route": self.route, "kind": self.kind, "count": self.count,
                "after": self.after, "params": self.params, "seen": self.seen,
                "applied": self.applied}


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_fault_params(kind: str, params: dict) -> None:
    if kind == "status" and not (_is_int(params["status"]) and 400 <= params["status"] <= 599):
        raise ValueError("status must be an integer 400..599")
    if kind in ("reset", "truncate", "stall") and params["bytes"] is not None:
        if not _is_int(params["bytes"]) or params["bytes"] < -1:
            raise ValueError("bytes must be an integer >= -1")
    if kind == "stall":
        if not isinstance(params["seconds"], (int, float)) or not 0 <= params["seconds"] <= 600:
            raise ValueError("seconds must be 0..600")
        if params["then"] not in ("close", "continue"):
            raise ValueError("then must be close or continue")
    if kind == "wrong_length" and (not _is_int(params["extra"]) or params["extra"] < 1):
        raise ValueError("extra must be a positive integer")
    if kind == "corrupt":
        if params["offset"] is not None and (not _is_int(params["offset"]) or params["offset"] < 0):
            raise ValueError("offset must be a non-negative integer")
        if not _is_int(params["mask"]) or not 1 <= params["mask"] <= 255:
            raise ValueError("mask must be 1..255")
    if kind == "wrong_types" and params["variant"] not in WRONG_TYPE_VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(WRONG_TYPE_VARIANTS)}")


class FaultPlan:
    def __init__(self):
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._next_id = 1

    def add(self, spec: dict) -> Fault:
        with self._lock:
            fault = Fault.from_spec(self._next_id, spec)
            self._next_id += 1
            self._faults.append(fault)
            return fault

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def select(self, route: str) -> Fault | None:
        """The fault for this request of `route`, counters advanced."""
        chosen = None
        with self._lock:
            for fault in self._faults:
                if fault.route != route:
                    continue
                fault.seen += 1
                left = fault.count == -1 or fault.applied < fault.count
                live = fault.seen > fault.after and left
                if live and chosen is None:
                    fault.applied += 1
                    chosen = fault
        return chosen

    def describe(self) -> list:
        with self._lock:
            return [f.describe() for f in self._faults]


def apply_wrong_types(document, variant: str):
    """A copy of a JSON answer with one field of the wrong type."""
    doc = copy.deepcopy(document)
    if not isinstance(doc, dict):
        return doc
    resources = doc.get("resources") if isinstance(doc.get("resources"), list) else []
    items = [r for r in resources if isinstance(r, dict)]
    if variant == "resources_object":
        doc["resources"] = {"items": doc.get("resources")}
    elif variant == "size_string":
        doc["size"] = str(doc.get("size"))
    elif variant == "errors_object":
        doc["errors"] = {"count": 0}
    elif variant == "risk_score_string":
        for item in items:
            item["risk_score"] = str(item.get("risk_score"))
    elif variant == "trigger_time_number":
        for item in items:
            item["trigger_time"] = 1764000000
    elif variant == "lineage_id_string":
        for item in items:
            item["event_lineage_id"] = "start..end"
    elif variant in ("next_id_number", "total_string"):
        page = doc.setdefault("page_response", {})
        if variant == "next_id_number":
            page["next_id"] = 12345
        else:
            page["total"] = str(page.get("total"))
    elif variant == "ids_numbers":
        doc["resources"] = list(range(len(resources)))
    elif variant == "event_fields":
        for item in items:
            action = item.setdefault("action", {})
            action["data_size"] = str(action.get("data_size", 0))
            action["blocked"] = "no"
            item["destination"] = {"email": {"to": "someone@example.com", "subject": 7}}
    elif variant == "access_token_number":
        doc["access_token"] = 12345
        doc["expires_in"] = "900"
        for item in items:
            item["access_token"] = 12345
    return doc


# ---------------------------------------------------------------------------
# Request log


class RequestLog:
    """Every API and storage request. A client may see the end of an answer
    before the serving thread has filed its entry, so snapshot() and clear()
    first wait (at most FINISH_WAIT s) for the entries whose last bytes are
    being sent; entries still running (a stall, latency) are shown with
    "in_progress": true."""

    FINISH_WAIT = 2.0

    def __init__(self, gate: ConcurrencyGate, tokens: TokenStore, log_file: str | None):
        self._changed = threading.Condition()
        self._entries: list[dict] = []
        self._open: dict[int, dict] = {}        # seq -> entry not yet filed
        self._finishing: set[int] = set()       # seqs sending their last bytes
        self._seq = 0
        self._gate = gate
        self._tokens = tokens
        self._file = open(log_file, "a", encoding="utf-8") if log_file else None

    def begin(self, **fields_) -> dict:
        entry = {"seq": 0, "listener": None, "connection": None, "connection_request": None,
                 "start": time.time(), "end": None, "method": None, "path": None,
                 "route": None, "status": 0, "bytes_sent": 0, "range": None,
                 "if_range": None, "authorization": False, "fault": None, "aborted": False}
        entry.update(fields_)
        with self._changed:
            self._seq += 1
            entry["seq"] = self._seq
            self._open[entry["seq"]] = entry
        return entry

    def finishing(self, entry: dict) -> None:
        """The answer's last bytes are about to go out."""
        with self._changed:
            self._finishing.add(entry["seq"])

    def finish(self, entry: dict) -> None:
        entry["end"] = time.time()
        with self._changed:
            self._open.pop(entry["seq"], None)
            self._finishing.discard(entry["seq"])
            self._entries.append(entry)
            if self._file:
                self._file.write(json.dumps(entry, ensure_ascii=False) + "\n")
                self._file.flush()
            self._changed.notify_all()

    def _settled(self) -> None:
        """Wait for the answers being finished (caller holds _changed)."""
        self._changed.wait_for(lambda: not self._finishing, timeout=self.FINISH_WAIT)

    def snapshot(self) -> dict:
        with self._changed:
            self._settled()
            running = [dict(e, in_progress=True) for e in self._open.values()]
            entries = sorted(self._entries + running, key=lambda e: e["seq"])
        by_route, by_status = {}, {}
        for entry in entries:
            by_route[str(entry["route"])] = by_route.get(str(entry["route"]), 0) + 1
            by_status[str(entry["status"])] = by_status.get(str(entry["status"]), 0) + 1
        summary = {"total": len(entries), "by_route": by_route, "by_status": by_status,
                   "count_429": by_status.get("429", 0),
                   "tokens_issued": self._tokens.issued(),
                   "tls_handshake_failures": sum(1 for e in entries if e.get("tls_error"))}
        summary.update(self._gate.stats())
        return {"requests": entries, "summary": summary}

    def clear(self) -> None:
        with self._changed:
            self._settled()
            self._entries.clear()
        self._gate.reset_stats()


# ---------------------------------------------------------------------------
# Installer files and answers


@dataclass(frozen=True)
class InstallerFile:
    path: str
    size: int
    mtime: float
    version: str
    name: str
    etag: str
    last_modified: str


def write_fake_installer(path: str, seed: int, size: int) -> None:
    """A deterministic PE-looking file: MZ header, PE signature, noise."""
    header = bytearray(0x200)
    header[0:2] = b"MZ"
    struct.pack_into("<I", header, 0x3C, 0x80)
    header[0x80:0x84] = b"PE\0\0"
    struct.pack_into("<HHIIIHH", header, 0x84, 0x8664, 1, 0, 0, 0, 0xF0, 0x22)
    rng = random.Random(f"installer:{seed}")
    with open(path, "wb") as out:
        out.write(bytes(header[:size]))
        left = size - min(size, len(header))
        while left > 0:
            block = rng.randbytes(min(left, 1024 * 1024))
            out.write(block)
            left -= len(block)


def installer_file(path: str, version: str, name: str) -> InstallerFile | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    tag = hashlib.sha256(f"{path}|{info.st_size}|{info.st_mtime_ns}|{version}".encode()).hexdigest()
    return InstallerFile(path, info.st_size, info.st_mtime, version, name,
                         f'"{tag[:32]}"', http_date(info.st_mtime))


def content_disposition(name: str) -> str:
    quoted = name.replace("\\", "\\\\").replace('"', '\\"')
    if name.isascii():
        return f'attachment; filename="{quoted}"'
    fallback = quoted.encode("ascii", "replace").decode().replace("?", "_")
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


def parse_range(value: str, size: int):
    """(first, last) of a single byte range, "unsatisfiable", or None when the
    header is to be ignored (malformed or several ranges)."""
    if not value.startswith("bytes=") or "," in value:
        return None
    first, dash, last = value[6:].strip().partition("-")
    first, last = first.strip(), last.strip()
    if not dash or (first and not first.isdigit()) or (last and not last.isdigit()):
        return None
    if not first:
        if not last:
            return None
        length = int(last)
        if length == 0 or size == 0:
            return "unsatisfiable"
        return max(0, size - length), size - 1
    start = int(first)
    end = size - 1 if not last else int(last)
    if last and end < start:
        return None
    if start >= size:
        return "unsatisfiable"
    return start, min(end, size - 1)


def _if_range_matches(value: str, inst: InstallerFile, validators: bool) -> bool:
    if not validators:
        return False
    value = value.strip()
    if value.startswith('"') or value.startswith("W/"):
        return value == inst.etag
    return value == inst.last_modified


def _not_modified(headers, inst: InstallerFile) -> bool:
    tags = headers.get("If-None-Match")
    if tags is not None:
        return tags.strip() == "*" or inst.etag in [t.strip() for t in tags.split(",")]
    since = headers.get("If-Modified-Since")
    if since is None:
        return False
    try:
        return int(inst.mtime) <= parsedate_to_datetime(since).timestamp()
    except (TypeError, ValueError):
        return False


# ---------------------------------------------------------------------------
# Responses


class ApiError(Exception):
    CODES = {400: "invalid_argument", 401: "unauthenticated", 403: "permission_denied",
             404: "not_found", 405: "method_not_allowed", 409: "conflict",
             413: "payload_too_large", 416: "range_not_satisfiable",
             429: "rate_limit_exceeded", 500: "internal", 502: "bad_gateway",
             503: "unavailable"}

    def __init__(self, status: int, message: str, code: str | None = None,
                 details: dict | None = None, headers=(), close: bool = False):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code or self.CODES.get(status, "error")
        self.details = details or {}
        self.headers = list(headers)
        self.close = close


@dataclass
class FileSlice:
    path: str
    start: int
    length: int


@dataclass
class Response:
    status: int
    headers: list = field(default_factory=list)
    payload: object = None            # JSON document, serialized when sent
    body: bytes = b""
    file: FileSlice | None = None
    content_type: str | None = "application/json"
    head: bool = False                # HEAD: announce the length, send nothing
    no_body: bool = False             # 304: no body, no Content-Length
    close: bool = False               # announce and do Connection: close


TYPES = {"token": "access_token", "incidents": "incident", "lineage": "event_lineage",
         "details": "event", "installer": "installer", "storage": "error", None: "error"}
VARIANT_TYPES = {"token": "com.vendor.auth.access-token.v2",
                 "incidents": "com.vendor.incident.v2",
                 "lineage": "com.vendor.event-lineage.v2", "details": "com.vendor.event.v2",
                 "installer": "com.vendor.installer.v2", "storage": "com.vendor.error.v2",
                 None: "com.vendor.error.v2"}


def type_name(route: str | None, cfg: Settings) -> str:
    return (VARIANT_TYPES if cfg.type_variant else TYPES)[route]


def envelope(kind: str, resources: list, errors=(), page_response: dict | None = None) -> dict:
    document = {"type": kind, "size": len(resources), "resources": resources,
                "errors": list(errors)}
    if page_response is not None:
        document["page_response"] = page_response
    return document


def error_response(err: ApiError, kind: str) -> Response:
    error = {"code": err.code, "message": err.message, "details": err.details}
    return Response(err.status, list(err.headers), payload=envelope(kind, [], [error]),
                    close=err.close)


HTML_ERROR_PAGE = (b"<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>"
                   b"<body><h1>Bad Gateway</h1><p>The upstream server is temporarily "
                   b"unavailable. Please try again later.</p></body></html>\n")


def fault_response(fault: Fault, kind: str) -> Response:
    """The answer of a "status" or "html_200" fault."""
    if fault.kind == "html_200":
        return Response(200, body=HTML_ERROR_PAGE, content_type="text/html; charset=utf-8")
    status = fault.params["status"]
    headers = []
    if fault.params["retry_after"] is not None:
        headers.append(("Retry-After", str(fault.params["retry_after"])))
    return error_response(ApiError(status, f"injected fault: status {status}",
                                   headers=headers), kind)


class BodySource:
    """The bytes of a response body: in memory, or a slice of a file read in
    chunks; optionally with one byte flipped."""

    def __init__(self, data: bytes = b"", file: FileSlice | None = None):
        self.data = data
        self.file = file
        self.length = file.length if file else len(data)
        self.flip_at: int | None = None     # offset within this body
        self.mask = 0xFF

    def corrupt(self, offset: int | None, mask: int) -> None:
        """Flip a byte: `offset` is within the body, or within the whole file
        for file bodies (a range that does not hold it is left intact)."""
        if self.file is None:
            where = self.length // 2 if offset is None else offset
            if 0 <= where < self.length:
                flipped = bytearray(self.data)
                flipped[where] ^= mask
                self.data = bytes(flipped)
            return
        where = os.path.getsize(self.file.path) // 2 if offset is None else offset
        if self.file.start <= where < self.file.start + self.file.length:
            self.flip_at, self.mask = where - self.file.start, mask

    def chunks(self, start: int, stop: int):
        if self.file is None:
            if start < stop:
                yield self.data[start:stop]
            return
        with open(self.file.path, "rb") as handle:
            handle.seek(self.file.start + start)
            position = start
            while position < stop:
                chunk = handle.read(min(CHUNK, stop - position))
                if not chunk:
                    raise OSError("installer file shrank while being served")
                if self.flip_at is not None and position <= self.flip_at < position + len(chunk):
                    chunk = bytearray(chunk)
                    chunk[self.flip_at - position] ^= self.mask
                    chunk = bytes(chunk)
                yield chunk
                position += len(chunk)


# ---------------------------------------------------------------------------
# Request handling


@dataclass
class Request:
    method: str
    path: str
    query: dict
    headers: object
    body: bytes = b""
    route: str | None = None
    fault: Fault | None = None
    key: str | None = None
    token: str | None = None
    rate: RateState | None = None


API_ROUTES = {
    "/v2/auth/token/access": ("token", {"POST": "token"}),
    "/v2/incidents/list": ("incidents", {"POST": "incidents"}),
    "/v2/event-lineage": ("lineage", {"POST": "lineage"}),
    "/v2/event-details": ("details", {"POST": "details_post", "GET": "details_get"}),
    "/v2/installer/windows/latest": ("installer", {"GET": "installer", "HEAD": "installer"}),
}


def resolve_route(path: str):
    """(route name, {method: handler name}) or (None, None)."""
    if path.startswith("/public/"):
        path = path[len("/public"):]
    if path in API_ROUTES:
        return API_ROUTES[path]
    parts = path.split("/")
    if len(parts) == 5 and parts[1:3] == ["v2", "installer"] and parts[4] == "latest" and parts[3]:
        return "installer", {"GET": "installer_other", "HEAD": "installer_other"}
    return None, None


def json_object(req: Request) -> dict:
    ctype = req.headers.get("Content-Type", "")
    if ctype.split(";")[0].strip().lower() != "application/json":
        raise ApiError(400, "Content-Type must be application/json")
    try:
        document = json.loads(req.body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ApiError(400, f"request body is not valid JSON: {err}") from None
    if not isinstance(document, dict):
        raise ApiError(400, "request body must be a JSON object")
    return document


def parse_sort(value) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ApiError(400, "page_request.sort_by must be a string")
    parts = value.split()
    field_name, direction = (parts + ["asc"])[:2] if len(parts) in (1, 2) else (None, None)
    if field_name != "trigger_time":
        raise ApiError(400, f"unsupported sort_by {value!r}: incidents sort by trigger_time")
    if direction.lower() not in ("asc", "desc"):
        raise ApiError(400, f"unsupported sort direction in {value!r}")
    return direction.lower()


def parse_bool(value: str, name: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0", ""):
        return False
    raise ApiError(400, f"{name} must be true or false")


class SimHandler(http.server.BaseHTTPRequestHandler):
    """What both listeners share: keep-alive HTTP/1.1, request bodies,
    the request log, and sending answers with faults applied."""

    protocol_version = "HTTP/1.1"
    server_version = "outpost-sim/1.0"
    sys_version = ""
    timeout = 60            # idle keep-alive connections are closed after this
    # An answer goes out as two writes (headers, then body): with Nagle the
    # body waited for the client's delayed ACK of the headers, 40 ms on
    # Linux, on every keep-alive request (real servers send both at once).
    disable_nagle_algorithm = True
    listener = "api"

    def setup(self) -> None:
        super().setup()
        self.sim: Simulator = self.server.sim
        self.connection_id = self.sim.next_connection_id()
        self.connection_requests = 0
        self.record: dict | None = None

    def log_message(self, fmt, *args) -> None:   # the request log replaces it
        pass

    def version_string(self) -> str:
        return self.server_version

    def do_GET(self) -> None:
        self.connection_requests += 1
        try:
            self.handle_request()
        except (ConnectionError, TimeoutError, ssl.SSLError):
            self.close_connection = True
            if self.record is not None:
                self.record["aborted"] = True
        finally:
            if self.record is not None:
                self.sim.log.finish(self.record)
                self.record = None

    do_POST = do_HEAD = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_GET

    def handle_request(self) -> None:
        raise NotImplementedError

    def send_error(self, code, message=None, explain=None) -> None:
        """Protocol-level errors (bad request line, huge headers) as envelopes."""
        if self.request_version == "HTTP/0.9":   # unparsable request: answer in HTTP/1.1
            self.request_version = "HTTP/1.1"
        error = {"code": ApiError.CODES.get(code, "error"), "message": message or explain or
                 self.responses.get(code, ("error",))[0], "details": {}}
        body = json_bytes(envelope("error", [], [error]))
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.close_connection = True

    # -- shared steps ------------------------------------------------------

    def target(self) -> tuple[str, str]:
        """(path, query) as sent: http.server folds a leading "//" into "/",
        which a real server would not do."""
        words = self.requestline.split()
        raw = words[1] if len(words) >= 2 else self.path
        path, _, query = raw.partition("?")
        return path, query

    def begin_record(self, route: str | None) -> dict:
        self.record = self.sim.log.begin(
            listener=self.listener, connection=self.connection_id,
            connection_request=self.connection_requests, method=self.command,
            path="?".join(p for p in self.target() if p), route=route,
            range=self.headers.get("Range"), if_range=self.headers.get("If-Range"),
            authorization=self.headers.get("Authorization") is not None)
        return self.record

    def read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked()
        length = self.headers.get("Content-Length")
        if not length:
            return b""
        try:
            size = int(length)
        except ValueError:
            raise ApiError(400, "bad Content-Length", close=True) from None
        if size < 0:
            raise ApiError(400, "bad Content-Length", close=True)
        if size > MAX_REQUEST_BODY:
            raise ApiError(413, "request body too large", close=True)
        body = self.rfile.read(size)
        if len(body) != size:
            raise ConnectionError("request body cut short")
        return body

    def _read_chunked(self) -> bytes:
        parts, total = [], 0
        while True:
            line = self.rfile.readline(1024)
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                raise ApiError(400, "bad chunked request body", close=True) from None
            if size == 0:
                while self.rfile.readline(8192).strip():
                    pass
                return b"".join(parts)
            total += size
            if total > MAX_REQUEST_BODY:
                raise ApiError(413, "request body too large", close=True)
            parts.append(self.rfile.read(size))
            self.rfile.readline(8)

    def transmit(self, resp: Response, fault: Fault | None) -> None:
        """Send `resp`, doing what `fault` asks of the bytes on the wire."""
        kind = fault.kind if fault else None
        params = fault.params if fault else {}
        if self.record is not None:
            self.record["fault"] = kind
        if kind != "stall" and self.record is not None:
            self.sim.log.finishing(self.record)
        if kind == "reset" and params["bytes"] == -1:
            self.abort_connection()
            return
        source = self._body_source(resp, kind, params)
        declared = source.length + (params["extra"] if kind == "wrong_length" else 0)
        self.send_response(resp.status)
        for name, value in resp.headers:
            self.send_header(name, value)
        if resp.content_type and not resp.no_body:
            self.send_header("Content-Type", resp.content_type)
        if not resp.no_body:
            self.send_header("Content-Length", str(declared))
        if resp.close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.record is not None:
            self.record["status"] = resp.status
        if resp.head or resp.no_body or self.command == "HEAD":
            if kind == "reset":
                self.abort_connection()
            return
        self._send_with_fault(source, kind, params)

    def _body_source(self, resp: Response, kind, params) -> BodySource:
        if resp.payload is not None:
            payload = resp.payload
            if kind == "wrong_types":
                payload = apply_wrong_types(payload, params["variant"])
            data = json_bytes(payload)
            if kind == "malformed_json":
                data = data[:max(1, len(data) // 2)]
            source = BodySource(data)
        else:
            source = BodySource(resp.body, resp.file)
        if kind == "corrupt":
            source.corrupt(params["offset"], params["mask"])
        return source

    def _send_with_fault(self, source: BodySource, kind, params) -> None:
        length = source.length
        cut = length
        if kind in ("reset", "truncate", "stall"):
            wanted = params["bytes"]
            cut = length // 2 if wanted is None else max(0, min(wanted, length))
        self.send_body(source, 0, cut)
        if kind == "reset":
            # Let the headers and any partial body reach the peer before the
            # RST: a reset that overtakes the headers would be a different
            # fault (no answer at all, bytes=-1).
            time.sleep(0.05)
        if kind == "stall":
            time.sleep(params["seconds"])
            if self.record is not None:
                self.sim.log.finishing(self.record)
            if params["then"] == "continue":
                self.send_body(source, cut, length)
            else:
                self.close_connection = True
        elif kind == "reset":
            self.abort_connection()
        elif kind in ("truncate", "wrong_length"):
            self.close_connection = True

    def send_body(self, source: BodySource, start: int, stop: int) -> None:
        if start >= stop:
            return
        plain = not isinstance(self.connection, ssl.SSLSocket)
        if plain and source.file is not None and source.flip_at is None:
            with open(source.file.path, "rb") as handle:
                sent = self.connection.sendfile(handle, source.file.start + start, stop - start)
            self.record["bytes_sent"] += sent
            if sent != stop - start:
                raise ConnectionError("installer file shrank while being served")
            return
        for chunk in source.chunks(start, stop):
            self.wfile.write(chunk)
            self.record["bytes_sent"] += len(chunk)

    def abort_connection(self) -> None:
        """Reset the TCP connection (RST, not FIN)."""
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.close_connection = True
        if self.record is not None:
            self.record["aborted"] = True
        self.connection.close()
        self.rfile.close()     # drops the last reference: the descriptor closes now

    def installer_answer(self, cfg: Settings, include_version: bool) -> Response:
        path = self.sim.installer_path(cfg)
        inst = installer_file(path, cfg.installer_version, cfg.installer_name)
        if inst is None:
            raise ApiError(404, "no installer is published")
        disposition = cfg.installer_disposition or content_disposition(inst.name)
        headers = [("Content-Disposition", disposition)]
        if include_version:
            headers.append(("X-Installer-Version", inst.version))
        if cfg.validators:
            headers += [("ETag", inst.etag), ("Last-Modified", inst.last_modified)]
        if cfg.range:
            headers.append(("Accept-Ranges", "bytes"))
        head = self.command == "HEAD"
        if cfg.validators and _not_modified(self.headers, inst):
            return Response(304, headers, no_body=True, content_type=None)
        wanted = self.headers.get("Range") if cfg.range else None
        if_range = self.headers.get("If-Range")
        if wanted and (if_range is None or _if_range_matches(if_range, inst, cfg.validators)):
            span = parse_range(wanted, inst.size)
            if span == "unsatisfiable":
                raise ApiError(416, "requested range not satisfiable",
                               headers=[("Content-Range", f"bytes */{inst.size}")])
            if span is not None:
                first, last = span
                headers.append(("Content-Range", f"bytes {first}-{last}/{inst.size}"))
                return Response(206, headers, file=FileSlice(path, first, last - first + 1),
                                content_type="application/octet-stream", head=head)
        return Response(200, headers, file=FileSlice(path, 0, inst.size),
                        content_type="application/octet-stream", head=head)


class ApiHandler(SimHandler):
    """The main listener: the API routes and the /_sim/ control API."""

    listener = "api"

    def handle_request(self) -> None:
        path, query = self.target()
        if path == "/_sim" or path.startswith("/_sim/"):
            self._control(path, query)
            return
        cfg = self.sim.config()
        route, methods = resolve_route(path)
        self.begin_record(route)
        req = Request(self.command, path, parse_qs(query, keep_blank_values=True),
                      self.headers, route=route)
        try:
            req.body = self.read_body()
        except ApiError as err:
            self.transmit(error_response(err, type_name(route, cfg)), None)
            return
        refusal = self._refusal(req, methods, cfg)
        if refusal is not None:
            self.transmit(refusal, None)
            return
        admitted = self.sim.gate.enter(route, cfg.max_concurrency)
        left = False
        try:
            if not admitted:
                self.transmit(self._too_many_in_flight(req, cfg), None)
                return
            if cfg.latency_ms > 0:
                time.sleep(cfg.latency_ms / 1000)
            req.fault = self.sim.faults.select(route)
            answer = self._answer(req, methods[req.method], cfg)
            # The slot is free once the answer is ready. A client counts a
            # request done when the answer's last byte arrives and may start
            # the next one, on another connection, before this thread gets
            # back from writing it: holding the slot through transmit()
            # refused, now and then, a client that never had more than the
            # limit in flight (1 run in 4 of the report benchmark, once
            # TCP_NODELAY made answers arrive at once).
            self.sim.gate.leave(route, admitted)
            left = True
            self.transmit(answer, req.fault)
        finally:
            if not left:
                self.sim.gate.leave(route, admitted)

    def _refusal(self, req: Request, methods, cfg: Settings) -> Response | None:
        """404 for unknown routes, 405 for other methods."""
        kind = type_name(req.route, cfg)
        if req.route is None:
            return error_response(ApiError(404, f"no route {req.path}"), kind)
        allowed = [m for m in methods if m != "HEAD" or cfg.head]
        if req.method not in allowed:
            return error_response(ApiError(405, f"{req.method} is not allowed here",
                                           headers=[("Allow", ", ".join(allowed))]), kind)
        return None

    def _too_many_in_flight(self, req: Request, cfg: Settings) -> Response:
        err = ApiError(429, f"more than {cfg.max_concurrency} requests in flight on this endpoint",
                       code="too_many_concurrent_requests", headers=[("Retry-After", "1")])
        resp = error_response(err, type_name(req.route, cfg))
        self._add_rate_headers(resp, req, cfg, peek_token=True)
        return resp

    def _answer(self, req: Request, handler: str, cfg: Settings) -> Response:
        kind = type_name(req.route, cfg)
        fault = req.fault
        if fault and fault.kind in ("status", "html_200"):
            return fault_response(fault, kind)
        try:
            if fault and fault.kind == "forbidden" and req.route == "token":
                raise ApiError(403, "injected fault: forbidden")
            if req.route != "token":
                self._authenticate(req, cfg)
                self._count_rate(req, cfg)
                if req.key in cfg.forbidden_keys or (fault and fault.kind == "forbidden"):
                    raise ApiError(403, "this API key may not use this endpoint")
            resp = getattr(self, "route_" + handler)(req, cfg)
        except ApiError as err:
            resp = error_response(err, kind)
        except Exception:       # a simulator bug: say so instead of hanging up
            traceback.print_exc()
            resp = error_response(ApiError(500, "simulator error (see its stderr)"), kind)
        self._add_rate_headers(resp, req, cfg)
        return resp

    # -- authentication and rate -------------------------------------------

    def _authenticate(self, req: Request, cfg: Settings) -> None:
        challenge = [("WWW-Authenticate", 'Bearer realm="outpost-sim"')]
        header = self.headers.get("Authorization")
        if not header:
            raise ApiError(401, "missing Authorization: Bearer header", headers=challenge)
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise ApiError(401, "Authorization must be Bearer <access token>", headers=challenge)
        entry = self.sim.tokens.lookup(token)
        if entry is None:
            raise ApiError(401, "invalid access token", headers=challenge)
        req.key, req.token = entry.key, token
        if req.fault and req.fault.kind == "expire_token":
            self.sim.tokens.expire(token)
        if not entry.valid(time.time()):
            raise ApiError(401, "access token expired", headers=challenge)

    def _count_rate(self, req: Request, cfg: Settings) -> None:
        if cfg.rate_limit <= 0:
            return
        req.rate = self.sim.rates.consume(req.key, cfg.rate_limit, cfg.rate_window)
        if not req.rate.allowed:
            raise ApiError(429, f"rate limit of {cfg.rate_limit} requests per "
                                f"{cfg.rate_window:g} s exceeded",
                           headers=[("Retry-After", str(req.rate.retry_after()))])

    def _add_rate_headers(self, resp: Response, req: Request, cfg: Settings,
                          peek_token: bool = False) -> None:
        if cfg.rate_limit <= 0 or not cfg.rate_headers:
            return
        if peek_token and req.key is None:
            _, _, token = self.headers.get("Authorization", "").partition(" ")
            entry = self.sim.tokens.lookup(token.strip())
            req.key = entry.key if entry else None
        if req.key is None:
            return
        state = req.rate or self.sim.rates.peek(req.key, cfg.rate_limit, cfg.rate_window)
        resp.headers += state.headers()

    # -- routes ------------------------------------------------------------

    def route_token(self, req: Request, cfg: Settings) -> Response:
        body = json_object(req)
        key = body.get("refresh_token")
        if not isinstance(key, str) or not key:
            raise ApiError(400, "refresh_token (string) is required")
        if key not in cfg.api_keys and key not in cfg.forbidden_keys:
            raise ApiError(401, "unknown API key")
        req.key = key
        grant = {"access_token": self.sim.tokens.issue(key, cfg.token_lifetime),
                 "token_type": "Bearer", "expires_in": math.ceil(cfg.token_lifetime)}
        wrapped = envelope(type_name("token", cfg), [grant])
        shapes = {"flat": grant, "envelope": wrapped, "both": {**wrapped, **grant}}
        payload = shapes[cfg.token_shape]
        return Response(200, [("Cache-Control", "no-store")], payload=payload)

    def route_incidents(self, req: Request, cfg: Settings) -> Response:
        body = json_object(req)
        page = body.get("page_request")
        page = {} if page is None else page
        if not isinstance(page, dict):
            raise ApiError(400, "page_request must be an object")
        try:
            wanted_filter = IncidentFilter.parse(body.get("filter"))
        except ValueError as err:
            raise ApiError(400, f"filter: {err}") from None
        size = page.get("size", cfg.default_page_size)
        if not _is_int(size) or not 1 <= size <= cfg.max_page_size:
            raise ApiError(400, f"page_request.size must be an integer 1..{cfg.max_page_size}")
        sort = parse_sort(page.get("sort_by"))
        include = body.get("include_ai_summaries", False)
        if include is not None and not isinstance(include, bool):
            raise ApiError(400, "include_ai_summaries must be a boolean")
        token = page.get("id")
        if token not in (None, ""):
            state = self._page_state(token, body, wanted_filter, sort)
        else:
            state = {"filter": wanted_filter.to_json(), "sort": sort or "asc",
                     "snapshot": self.sim.dataset.count(), "offset": 0}
        records, total = self.sim.dataset.page(IncidentFilter.from_json(state["filter"]),
                                               state["sort"] == "desc", state["snapshot"],
                                               state["offset"], size)
        next_offset = state["offset"] + len(records)
        next_id = self.sim.page_tokens.encode(dict(state, offset=next_offset)) \
            if next_offset < total else None
        if req.fault and req.fault.kind == "repeat_next_id" and token:
            next_id = token
        page_response = {"total": total}
        if next_id:
            page_response["next_id"] = next_id
        elif cfg.next_id_style != "absent":
            page_response["next_id"] = "" if cfg.next_id_style == "empty" else None
        resources = [r.view(bool(include)) for r in records]
        return Response(200, payload=envelope(type_name("incidents", cfg), resources,
                                              page_response=page_response))

    def _page_state(self, token, body: dict, wanted_filter: IncidentFilter, sort) -> dict:
        if not isinstance(token, str):
            raise ApiError(400, "page_request.id must be a string")
        try:
            state = self.sim.page_tokens.decode(token)
        except ValueError as err:
            raise ApiError(400, str(err)) from None
        if body.get("filter") is not None and wanted_filter.to_json() != state["filter"]:
            raise ApiError(400, "filter differs from the one this page token was issued for")
        if sort is not None and sort != state["sort"]:
            raise ApiError(400, "sort_by differs from the one this page token was issued for")
        return state

    def route_lineage(self, req: Request, cfg: Settings) -> Response:
        body = json_object(req)
        start, end = body.get("start_event_id"), body.get("end_event_id")
        for name, value in (("start_event_id", start), ("end_event_id", end)):
            if not isinstance(value, str) or not value:
                raise ApiError(400, f"{name} (non-empty string) is required")
        try:
            chain = self.sim.dataset.lineage(start, end)
        except LookupError as err:
            raise ApiError(404, str(err)) from None
        return Response(200, payload=envelope(type_name("lineage", cfg), chain))

    def route_details_post(self, req: Request, cfg: Settings) -> Response:
        body = json_object(req)
        ids = body.get("ids")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ApiError(400, "ids (array of strings) is required")
        include = body.get("include_content", False)
        if include is not None and not isinstance(include, bool):
            raise ApiError(400, "include_content must be a boolean")
        return self._details(ids, bool(include), cfg)

    def route_details_get(self, req: Request, cfg: Settings) -> Response:
        if "ids" not in req.query:
            raise ApiError(400, "query parameter ids is required")
        ids = [i for value in req.query["ids"] for i in value.split(",") if i]
        include = parse_bool(req.query.get("include_content", ["false"])[-1], "include_content")
        return self._details(ids, include, cfg)

    def _details(self, ids: list, include_content: bool, cfg: Settings) -> Response:
        if len(ids) > cfg.max_detail_ids:
            raise ApiError(400, f"at most {cfg.max_detail_ids} ids per call",
                           details={"max_ids": cfg.max_detail_ids, "given": len(ids)})
        events = self.sim.dataset.details(ids, include_content)
        return Response(200, payload=envelope(type_name("details", cfg), events))

    def route_installer(self, req: Request, cfg: Settings) -> Response:
        if not cfg.redirect:
            return self.installer_answer(cfg, include_version=True)
        signature = hashlib.sha256(f"{time.time()}:{self.connection_id}".encode()).hexdigest()[:24]
        location = (f"{cfg.redirect_to or self.sim.storage_url}/installer/windows/"
                    f"{quote(cfg.installer_name, safe='')}?sig={signature}&expires="
                    f"{int(time.time()) + 300}")
        headers = [("Location", location), ("Cache-Control", "no-store")]
        if cfg.redirect_version_header in ("both", "redirect"):
            headers.append(("X-Installer-Version", cfg.installer_version))
        return Response(302, headers, content_type=None)

    def route_installer_other(self, req: Request, cfg: Settings) -> Response:
        raise ApiError(404, "no installer is published for this platform")

    # -- control API -------------------------------------------------------

    def _control(self, path: str, query: str) -> None:
        try:
            body = self.read_body()
            status, payload = self.sim.control.handle(self.command, path, parse_qs(query), body)
        except ApiError as err:
            status, payload = err.status, {"error": err.message}
        except Exception as err:   # a simulator bug
            traceback.print_exc()
            status, payload = 500, {"error": f"simulator error: {err}"}
        data = json_bytes(payload)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)


class StorageHandler(SimHandler):
    """The storage host the installer route redirects to: no authentication,
    but whether an Authorization header arrived is recorded."""

    listener = "storage"

    def handle_request(self) -> None:
        path, _ = self.target()
        cfg = self.sim.config()
        self.begin_record("storage")
        fault = None
        try:
            self.read_body()
            if not path.startswith("/installer/"):
                raise ApiError(404, f"no object {path}")
            allowed = ["GET", "HEAD"] if cfg.head else ["GET"]
            if self.command not in allowed:
                raise ApiError(405, f"{self.command} is not allowed here",
                               headers=[("Allow", ", ".join(allowed))])
            fault = self.sim.faults.select("storage")
            if fault and fault.kind in ("status", "html_200"):
                resp = fault_response(fault, type_name("storage", cfg))
            else:
                include = cfg.redirect_version_header in ("both", "storage")
                resp = self.installer_answer(cfg, include_version=include)
        except ApiError as err:
            resp = error_response(err, type_name("storage", cfg))
        self.transmit(resp, fault)


# ---------------------------------------------------------------------------
# Control API


class ControlApi:
    """/_sim/ routes: (method, path, query, body) -> (status, JSON document)."""

    def __init__(self, sim: "Simulator"):
        self.sim = sim
        self.routes = {
            ("GET", "/_sim/log"): self.get_log,
            ("POST", "/_sim/log/clear"): self.clear_log,
            ("GET", "/_sim/faults"): self.get_faults,
            ("POST", "/_sim/faults"): self.add_faults,
            ("DELETE", "/_sim/faults"): self.clear_faults,
            ("GET", "/_sim/config"): self.get_config,
            ("POST", "/_sim/config"): self.set_config,
            ("POST", "/_sim/incidents/add"): self.add_incidents,
            ("POST", "/_sim/tokens/expire"): self.expire_tokens,
            ("GET", "/_sim/dataset"): self.get_dataset,
            ("GET", "/_sim/installer"): self.get_installer,
        }

    def handle(self, method: str, path: str, query: dict, body: bytes):
        action = self.routes.get((method, path))
        if action is None:
            raise ApiError(404, f"no control route {method} {path}")
        document = None
        if body.strip():
            try:
                document = json.loads(body)
            except (UnicodeDecodeError, json.JSONDecodeError) as err:
                raise ApiError(400, f"body is not JSON: {err}") from None
        try:
            return 200, action(document)
        except (ValueError, TypeError, KeyError) as err:
            raise ApiError(400, str(err)) from None

    def get_log(self, _):
        return self.sim.log.snapshot()

    def clear_log(self, _):
        self.sim.log.clear()
        return {"ok": True}

    def get_faults(self, _):
        return {"faults": self.sim.faults.describe()}

    def add_faults(self, document):
        specs = document.get("faults") if isinstance(document, dict) and "faults" in document \
            else [document]
        added = [self.sim.faults.add(spec).describe() for spec in specs]
        return {"added": added}

    def clear_faults(self, _):
        self.sim.faults.clear()
        return {"ok": True}

    def get_config(self, _):
        return {"config": asdict(self.sim.config())}

    def set_config(self, document):
        if not isinstance(document, dict):
            raise ValueError("config changes are a JSON object")
        self.sim.configure(document)
        return {"config": asdict(self.sim.config())}

    def add_incidents(self, document):
        document = document or {}
        count = document.get("count", 1)
        if not _is_int(count) or not 0 <= count <= 100000:
            raise ValueError("count must be an integer 0..100000")
        trigger = document.get("trigger_time")
        moment = None if trigger is None else int(parse_iso_utc(trigger))
        fields = document.get("fields")
        if fields is not None and not isinstance(fields, dict):
            raise ValueError("fields must be an object")
        added = self.sim.dataset.add_incidents(count, moment, fields)
        return {"added": added, "total": self.sim.dataset.count()}

    def expire_tokens(self, _):
        return {"expired": self.sim.tokens.expire_all()}

    def get_dataset(self, _):
        return self.sim.dataset.to_json()

    def get_installer(self, _):
        cfg = self.sim.config()
        inst = installer_file(self.sim.installer_path(cfg), cfg.installer_version,
                              cfg.installer_name)
        if inst is None:
            raise ValueError("the installer file does not exist")
        return {"path": inst.path, "size": inst.size, "sha256": self.sim.sha256_of(inst),
                "version": inst.version, "name": inst.name, "etag": inst.etag,
                "last_modified": inst.last_modified}


# ---------------------------------------------------------------------------
# Servers and the simulator


def make_certificates(directory: str) -> dict:
    """Test CA and a server certificate for localhost, storage.localhost,
    127.0.0.1 and ::1, made with the openssl CLI (reused if present)."""
    paths = {name: os.path.join(directory, name)
             for name in ("ca.pem", "ca.key", "server.pem", "server.key")}
    if all(os.path.exists(p) for p in paths.values()):
        return paths
    os.makedirs(directory, exist_ok=True)
    extensions = os.path.join(directory, "server.ext")
    with open(extensions, "w", encoding="ascii") as out:
        out.write("basicConstraints=critical,CA:FALSE\n"
                  "keyUsage=critical,digitalSignature\n"
                  "extendedKeyUsage=serverAuth\n"
                  "subjectAltName=DNS:localhost,DNS:storage.localhost,IP:127.0.0.1,IP:::1\n"
                  "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n")
    curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    csr = os.path.join(directory, "server.csr")
    commands = [
        ["openssl", "req", "-x509", *curve, "-keyout", paths["ca.key"], "-out", paths["ca.pem"],
         "-days", "365", "-subj", "/O=outpost tests/CN=outpost-sim test CA",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
        ["openssl", "req", "-new", *curve, "-keyout", paths["server.key"], "-out", csr,
         "-subj", "/O=outpost tests/CN=localhost"],
        ["openssl", "x509", "-req", "-in", csr, "-CA", paths["ca.pem"], "-CAkey", paths["ca.key"],
         "-set_serial", str(secrets.randbits(63)), "-days", "365", "-extfile", extensions,
         "-out", paths["server.pem"]],
    ]
    for command in commands:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command[:3])} failed: {done.stderr.strip()}")
    return paths


class SimServer(http.server.ThreadingHTTPServer):
    """A threaded HTTP(S) server; the TLS handshake runs in the connection's
    own thread so a slow or failing client never blocks accept()."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address, handler, sim: "Simulator", tls: ssl.SSLContext | None):
        self.sim = sim
        self.tls = tls
        super().__init__(address, handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind would look the host name up (getfqdn): skip it.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "localhost", self.server_address[1]

    def finish_request(self, request, client_address) -> None:
        if self.tls is None:
            super().finish_request(request, client_address)
            return
        request.settimeout(10)
        try:
            secured = self.tls.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as err:
            entry = self.sim.log.begin(listener=self.RequestHandlerClass.listener,
                                       tls_error=str(err))
            self.sim.log.finish(entry)
            return
        try:
            self.RequestHandlerClass(secured, client_address, self)
        finally:
            _close_tls(secured)

    def handle_error(self, request, client_address) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionError, TimeoutError, ssl.SSLError)):
            return
        super().handle_error(request, client_address)


def _close_tls(sock: ssl.SSLSocket) -> None:
    """Send close_notify without waiting for the peer's, then close."""
    if sock.fileno() < 0:
        return
    try:
        sock.setblocking(False)
        sock.unwrap()
    except (ssl.SSLError, OSError, ValueError):
        pass
    sock.close()


class Simulator:
    """Owns the state and the two listeners."""

    def __init__(self, args: argparse.Namespace):
        self.workdir = tempfile.mkdtemp(prefix="outpost-sim-")
        self._running = False
        try:
            self._build(args)
        except BaseException:
            shutil.rmtree(self.workdir, ignore_errors=True)
            raise

    def _build(self, args: argparse.Namespace) -> None:
        self._settings = settings_from_args(args)
        self._settings_lock = threading.Lock()
        reference = int(parse_iso_utc(args.reference_time)) if args.reference_time \
            else int(time.time())
        self.dataset = Dataset(args.seed, args.incidents, args.span_hours, reference,
                               args.missing_fraction, args.chain_max)
        self.page_tokens = PageTokens(hashlib.sha256(f"page-tokens:{args.seed}".encode()).digest())
        self.tokens = TokenStore()
        self.rates = RateLimiter()
        self.gate = ConcurrencyGate()
        self.faults = FaultPlan()
        self.log = RequestLog(self.gate, self.tokens, args.log_file)
        self.control = ControlApi(self)
        self.fake_installer = os.path.join(self.workdir, "SensorSetup-fake.exe")
        write_fake_installer(self.fake_installer, args.seed, args.installer_size)
        self._sha_cache: dict = {}
        self._connections = 0
        self._counter_lock = threading.Lock()
        self.ca_file = None
        tls = None
        if args.tls:
            paths = make_certificates(args.cert_dir or os.path.join(self.workdir, "certs"))
            tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            tls.minimum_version = ssl.TLSVersion.TLSv1_2
            tls.load_cert_chain(paths["server.pem"], paths["server.key"])
            self.ca_file = os.path.abspath(paths["ca.pem"])
        self.api_server = SimServer(("127.0.0.1", args.port), ApiHandler, self, tls)
        self.storage_server = SimServer(("127.0.0.1", args.storage_port), StorageHandler, self, tls)
        self.port = self.api_server.server_address[1]
        self.storage_port = self.storage_server.server_address[1]
        scheme = "https" if tls else "http"
        self.url = f"{scheme}://{'localhost' if tls else '127.0.0.1'}:{self.port}"
        self.storage_url = (f"{scheme}://{'storage.localhost' if tls else '127.0.0.1'}"
                            f":{self.storage_port}")

    def config(self) -> Settings:
        with self._settings_lock:
            return self._settings.copy()

    def configure(self, changes: dict) -> None:
        changes = dict(changes)
        missing_events = changes.pop("missing_events", None)
        missing_fraction = changes.pop("missing_fraction", None)
        if missing_events is not None and (not isinstance(missing_events, list) or
                                           not all(isinstance(e, str) for e in missing_events)):
            raise ValueError("missing_events must be a list of event ids")
        if missing_fraction is not None and not isinstance(missing_fraction, (int, float)):
            raise ValueError("missing_fraction must be a number")
        installer = changes.get("installer")
        if installer is not None and not os.path.isfile(installer):
            raise ValueError(f"installer file {installer!r} does not exist")
        with self._settings_lock:
            before = (self._settings.rate_limit, self._settings.rate_window)
            self._settings.update(changes)
            after = (self._settings.rate_limit, self._settings.rate_window)
        if before != after:
            self.rates.reset()
        if missing_fraction is not None:
            self.dataset.set_missing_fraction(float(missing_fraction))
        if missing_events is not None:
            self.dataset.set_missing(missing_events)

    def installer_path(self, cfg: Settings) -> str:
        return cfg.installer or self.fake_installer

    def sha256_of(self, inst: InstallerFile) -> str:
        key = (inst.path, inst.size, inst.mtime)
        if key not in self._sha_cache:
            digest = hashlib.sha256()
            with open(inst.path, "rb") as handle:
                for block in iter(lambda: handle.read(1024 * 1024), b""):
                    digest.update(block)
            self._sha_cache[key] = digest.hexdigest()
        return self._sha_cache[key]

    def next_connection_id(self) -> int:
        with self._counter_lock:
            self._connections += 1
            return self._connections

    def start(self) -> None:
        self._running = True
        for server in (self.api_server, self.storage_server):
            threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                             daemon=True).start()

    def ready_line(self) -> dict:
        return {"port": self.port, "url": self.url, "ca_file": self.ca_file,
                "storage_port": self.storage_port, "storage_url": self.storage_url}

    def stop(self) -> None:
        for server in (self.api_server, self.storage_server):
            if self._running:         # shutdown() waits for serve_forever
                server.shutdown()
            server.server_close()
        shutil.rmtree(self.workdir, ignore_errors=True)


def settings_from_args(args: argparse.Namespace) -> Settings:
    settings = Settings()
    settings.update({
        "api_keys": args.api_key or ["sim-api-key"],
        "forbidden_keys": args.forbidden_key or ["sim-forbidden-key"],
        "token_lifetime": args.token_lifetime, "token_shape": args.token_shape,
        "rate_limit": args.rate_limit, "rate_window": args.rate_window,
        "rate_headers": not args.no_rate_headers,
        "max_concurrency": args.max_concurrency, "latency_ms": args.latency_ms,
        "installer": os.path.abspath(args.installer) if args.installer else None,
        "installer_version": args.installer_version, "installer_name": args.installer_name,
        "validators": not args.no_validators, "head": not args.no_head,
        "range": not args.no_range, "redirect": args.redirect,
        "redirect_version_header": args.redirect_version_header,
        "type_variant": args.type_variant, "next_id_style": args.next_id_style,
        "max_detail_ids": args.max_detail_ids,
    })
    return settings


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Simulator of the Security Platform API v2.0 for outpost's tests "
                    "(see the module docstring for the control API and fault kinds).")
    add = parser.add_argument
    add("--tls", action="store_true", help="serve HTTPS with a generated test CA")
    add("--cert-dir", help="where the CA and server certificate go (reused if present)")
    add("--port", type=int, default=0, help="API port (0: ephemeral)")
    add("--storage-port", type=int, default=0, help="storage listener port (0: ephemeral)")
    add("--seed", type=int, default=1)
    add("--incidents", type=int, default=200, help="incidents generated at start")
    add("--span-hours", type=float, default=12.0, help="incidents spread over the last H hours")
    add("--reference-time", help="ISO 8601 'now' of the data set (default: start time)")
    add("--chain-max", type=int, default=40,
        help="longest lineage chain (events); the mean is half of it")
    add("--missing-fraction", type=float, default=0.01,
        help="share of traced events absent from event-details")
    add("--api-key", action="append", help="accepted API key (repeatable)")
    add("--forbidden-key", action="append", help="key whose tokens get 403 (repeatable)")
    add("--token-lifetime", type=float, default=900.0, help="seconds")
    add("--token-shape", choices=CHOICES["token_shape"], default="both")
    add("--rate-limit", type=int, default=60, help="requests per window per key (0: off)")
    add("--rate-window", type=float, default=60.0, help="seconds")
    add("--no-rate-headers", action="store_true", help="limit, but send no X-RateLimit-*")
    add("--max-concurrency", type=int, default=5, help="in flight per endpoint (0: off)")
    add("--latency-ms", type=float, default=0.0)
    add("--installer", help="file served by the installer route")
    add("--installer-size", type=int, default=256 * 1024, help="size of the generated fake")
    add("--installer-version", default="26.01.03.24329-0de7ab+")
    add("--installer-name", default="SensorSetup.exe")
    add("--no-validators", action="store_true", help="no ETag / Last-Modified (gateway mode)")
    add("--no-head", action="store_true", help="HEAD gets 405")
    add("--no-range", action="store_true", help="ignore Range, always 200")
    add("--redirect", action="store_true", help="installer route redirects to storage")
    add("--redirect-version-header", choices=CHOICES["redirect_version_header"], default="both")
    add("--type-variant", action="store_true", help="vendor-style envelope type values")
    add("--next-id-style", choices=CHOICES["next_id_style"], default="empty")
    add("--max-detail-ids", type=int, default=1000)
    add("--log-file", help="append every request as a JSON line")
    add("--watch-stdin", action="store_true", help="exit when stdin reaches end of file")
    args = parser.parse_args(argv)
    if args.chain_max < 1:
        parser.error("--chain-max must be at least 1")
    if args.installer and not os.path.isfile(args.installer):
        parser.error(f"--installer {args.installer}: no such file")
    if args.reference_time:
        try:
            parse_iso_utc(args.reference_time)
        except ValueError as err:
            parser.error(f"--reference-time: {err}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    sim = Simulator(args)
    if stop.is_set():           # asked to stop while starting up
        sim.stop()
        return 0
    if args.watch_stdin:
        def watch():
            # os.read, not sys.stdin: a thread blocked in a buffered read
            # makes the interpreter abort at exit.
            while os.read(sys.stdin.fileno(), 4096):
                pass
            stop.set()
        threading.Thread(target=watch, daemon=True).start()
    sim.start()
    sys.stdout.write(json.dumps(sim.ready_line()) + "\n")
    sys.stdout.flush()
    while not stop.wait(0.1):
        pass
    sim.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
