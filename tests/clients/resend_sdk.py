#!/usr/bin/env python3
"""Runs the official Resend Python SDK (PyPI `resend` 2.52) against a live Herald server.

Every SDK call that maps to a Herald route is made once (or more) and its answer is checked:
ids come back and match, names and values read back as written, statuses are the ones Herald
documents. One line per call: `ok <call>`, `FAIL <call>: <why>` (with the request the SDK sent
and Herald's answer), or `skip <call>` when a call it needs failed. Where the answer works but
differs from the SDK's declared types, a `diverge <call> [<key>]: ...` line says how. Each
divergence has a stable key (`<object>.<field>`, e.g. `email.tags`); the keys listed in the table
under `### Where answers differ from the Resend SDKs' types` in docs/decisions.md pass, any other
key fails the run (`FAIL <call>: divergence [<key>] is not listed in docs/decisions.md: ...`).
Exit status 1 when anything failed, after running everything.

Environment:
  HERALD_BASE_URL      the server, e.g. http://127.0.0.1:18081
  HERALD_API_KEY       a full_access key of the team (rk_...)
  HERALD_FROM_DOMAIN   a domain verified on the team (mail is sent from sdk@<it>)
  HERALD_DOMAIN_ID     that domain's id
  HERALD_SMTP_PORT     Herald's inbound SMTP port on 127.0.0.1 (receiving must be enabled on
                       HERALD_FROM_DOMAIN: the check mails sdk-in-<run>@<it> with smtplib)

The server must allow webhook endpoints on loopback (HERALD_WEBHOOK_ALLOW_PRIVATE=true): the
check receives and verifies real deliveries on 127.0.0.1. Broadcasts need the team's postal
address: the check sets one with a plain PATCH /team when the team has none (no SDK call does).

Herald routes the SDK has no call for (not checked here): the received message's raw source
(GET /emails/receiving/{id}/raw) and delete, template versions and checks, the broadcast checklist
and checks.

SDK calls left out because Herald has no route for them (yet):
  resend.Inboxes.* (agent, drafts, labels, threads)            support Inbox (later issue)
  resend.OAuthGrants.*                                         delegated access (issue 20)
  resend.Usage.get                                             GET /usage
  resend.Domains.Claims.verify                                 POST /domains/{id}/claim/verify
                                                               (Herald checks a claim on
                                                               POST /domains/{id}/verify)
Async variants (`*_async`) send the same requests as the sync calls checked here.
"""

import base64
import hashlib
import hmac
import http.server
import json
import os
import queue
import secrets
import smtplib
import sys
import threading
import time
import traceback
import urllib.parse
import warnings
import re
from datetime import datetime, timedelta, timezone
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path

import requests
import resend
from resend.exceptions import ResendError
from resend.http_client_requests import RequestsClient

# --- settings ---------------------------------------------------------------------------------


def env(name):
    value = os.environ.get(name, "").strip()
    if not value:
        sys.exit(f"resend_sdk.py: set {name} (see the docstring)")
    return value


BASE_URL = env("HERALD_BASE_URL").rstrip("/")
API_KEY = env("HERALD_API_KEY")
FROM_DOMAIN = env("HERALD_FROM_DOMAIN")
DOMAIN_ID = env("HERALD_DOMAIN_ID")
SMTP_PORT = int(env("HERALD_SMTP_PORT"))

RUN = secrets.token_hex(4)  # makes names unique, so the check can run twice on one database
FROM = f"SDK check <sdk@{FROM_DOMAIN}>"
DELIVERED = "delivered@simulator.herald.test"
CC = "delivered+cc@simulator.herald.test"
BCC = "delivered+bcc@simulator.herald.test"

# The legacy Audiences calls are made on purpose.
warnings.filterwarnings("ignore", message="Audiences is deprecated", category=DeprecationWarning)

resend.api_url = BASE_URL
resend.api_key = API_KEY

# --- transport: remembers the last exchange (shown on failure), waits out 429s ------------------


class RecordingClient(RequestsClient):
    """The SDK's default client, keeping the last request and answer and retrying rate limits."""

    last = None

    def request(self, method, url, headers, json=None, files=None, data=None):
        for _ in range(20):
            content, status, resp_headers = super().request(method, url, headers, json, files, data)
            if status != 429:
                break
            time.sleep(min(float(resp_headers.get("retry-after", "1") or 1), 5))
        sent = json if files is None else {"multipart": sorted(files), **(data or {})}
        RecordingClient.last = (method.upper(), url, sent, status, content)
        return content, status, resp_headers


resend.default_http_client = RecordingClient()


def last_exchange():
    if RecordingClient.last is None:
        return "(no request was sent)"
    method, url, sent, status, content = RecordingClient.last
    body = "" if sent in (None, {}) else " " + clip(json.dumps(sent, default=str))
    return f"request: {method} {url.removeprefix(BASE_URL)}{body}\n      answer: {status} {clip(content.decode('utf-8', 'replace'))}"


def clip(text, limit=600):
    return text if len(text) <= limit else text[:limit] + "..."


# --- reporting ---------------------------------------------------------------------------------

failures, divergences, skipped = [], [], []


class Failed(Exception):
    pass


def step(name, fn, *needs):
    """Runs one call and its checks; answers its result, or None when it (or a need) failed."""
    if any(need is None for need in needs):
        print(f"skip {name} (a call it needs failed)", flush=True)
        skipped.append(name)
        return None
    RecordingClient.last = None
    failed_before = len(failures)
    try:
        result = fn()
    except Exception as error:  # noqa: BLE001 - every failure is reported, none stops the run
        why = f"{type(error).__name__}: {error}" if not isinstance(error, Failed) else str(error)
        if isinstance(error, ResendError):
            why = f"{type(error).__name__} {error.code} {error.error_type}: {error.message}"
        elif not isinstance(error, (Failed, ValueError)):
            why += "\n" + traceback.format_exc(limit=3)
        print(f"FAIL {name}: {why}\n      {last_exchange()}", flush=True)
        failures.append(name)
        return None
    if len(failures) == failed_before:  # else an unlisted divergence already printed its FAIL line
        print(f"ok {name}", flush=True)
    return result if result is not None else True


def expect(condition, message):
    if not condition:
        raise Failed(message)


def eq(actual, expected, what):
    expect(actual == expected, f"{what} is {actual!r}, expected {expected!r}")


def get(answer, key):
    expect(isinstance(answer, dict) and key in answer, f"the answer has no `{key}`: {clip(str(answer))}")
    return answer[key]


def listed_divergences():
    """The keys of the table under `### Where answers differ from the Resend SDKs' types`."""
    lines = DECISIONS.read_text(encoding="utf-8").splitlines()
    heading = "### Where answers differ from the Resend SDKs' types"
    if heading not in lines:
        sys.exit(f"resend_sdk.py: {DECISIONS} has no line `{heading}`")
    keys = set()
    for line in lines[lines.index(heading) + 1:]:
        if line.startswith("#"):
            break
        match = re.match(r"^\| `([^`]+)` \|", line)
        if match:
            keys.add(match.group(1))
    return keys


DECISIONS = Path(__file__).resolve().parents[2] / "docs/decisions.md"
LISTED = listed_divergences()


def diverge(key, name, message):
    """A difference from the SDK's declared types: passes when docs/decisions.md lists its key."""
    if key in LISTED:
        print(f"diverge {name} [{key}]: {message}", flush=True)
        divergences.append(f"{name} [{key}]: {message}")
    else:
        print(f"FAIL {name}: divergence [{key}] is not listed in docs/decisions.md: {message}", flush=True)
        failures.append(f"{name} [{key}]")


def sdk_fields(key, name, answer, fields):
    """Notes the fields the SDK's types declare that the answer lacks."""
    missing = [f for f in fields if not (isinstance(answer, dict) and f in answer)]
    if missing:
        diverge(key, name, f"the SDK's type declares {', '.join(missing)}; the answer lacks {'it' if len(missing) == 1 else 'them'}")


def in_list(answer, key, value, what):
    data = get(answer, "data")
    expect(isinstance(data, list), f"`data` is not a list: {clip(str(data))}")
    expect(any(item.get(key) == value for item in data), f"{what} {value!r} is not in the list ({len(data)} items)")
    return next(item for item in data if item.get(key) == value)


def listing(name, answer, of):
    """Checks the list envelope every list answer shares (`of`: the listed object, e.g. `contact`)."""
    eq(get(answer, "object"), "list", "object")
    expect(isinstance(get(answer, "data"), list), "`data` is not a list")
    if "has_more" not in answer:
        diverge(f"{of}-list.has_more", name, "the answer has no `has_more` (the SDK's list types declare it)")


def not_found(fn):
    """Checks that a call answers 404."""
    try:
        fn()
    except ResendError as error:
        eq(str(error.code), "404", "status")
        return True
    raise Failed("expected 404 not_found, the call succeeded")


def refused(fn, status, name):
    try:
        fn()
    except ResendError as error:
        eq((str(error.code), error.error_type), (str(status), name), "error")
        return True
    raise Failed(f"expected {status} {name}, the call succeeded")


def iso_in(minutes):
    return (datetime.now(timezone.utc) + timedelta(minutes=minutes)).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def same_instant(a, b):
    parse = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))
    return a is not None and abs((parse(a) - parse(b)).total_seconds()) < 1


def tag_map(tags):
    """Tags as a name-to-value map, from Resend's list of `{name, value}` or Herald's map."""
    if isinstance(tags, list):
        return {t["name"]: t.get("value") for t in tags}
    return dict(tags or {})


def wait_for(what, fn, seconds=30):
    deadline = time.time() + seconds
    while True:
        found = fn()
        if found:
            return found
        if time.time() > deadline:
            raise Failed(f"gave up after {seconds} s waiting for {what}")
        time.sleep(0.5)


# --- a local webhook receiver --------------------------------------------------------------------


class Receiver:
    """Collects POSTs on 127.0.0.1 (headers lower-cased, body as text)."""

    def __init__(self):
        self.received = queue.Queue()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                outer.received.put(({k.lower(): v for k, v in self.headers.items()}, body.decode("utf-8")))
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def next(self, matches, seconds=30):
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                headers, body = self.received.get(timeout=0.5)
            except queue.Empty:
                continue
            if matches(headers, json.loads(body)):
                return headers, body
        raise Failed(f"no matching delivery reached {self.url} within {seconds} s")


def standard_webhook_headers(headers):
    """The Standard Webhooks headers of a delivery, as the SDK's verify takes them."""
    for name in ("webhook-id", "webhook-timestamp", "webhook-signature"):
        expect(name in headers, f"the delivery has no `{name}` header (has: {', '.join(sorted(headers))})")
    return {"id": headers["webhook-id"], "timestamp": headers["webhook-timestamp"], "signature": headers["webhook-signature"]}


def sign(secret, msg_id, timestamp, body):
    """Signs like Herald: HMAC-SHA256 of `id.timestamp.body` under the base64 key after `whsec_`."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    digest = hmac.new(key, f"{msg_id}.{timestamp}.{body}".encode(), hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


# --- emails --------------------------------------------------------------------------------------

TEXT_BYTES = b"Hello from the Resend Python SDK.\r\n"
BINARY_BYTES = bytes([0, 1, 2, 3, 254, 255]) + b"binary"


def emails():
    tags = [{"name": "category", "value": "sdk_check"}, {"name": "run", "value": RUN}]
    params = {
        "from": FROM,
        "to": [DELIVERED],
        "cc": [CC],
        "bcc": BCC,
        "subject": f"SDK check {RUN}",
        "html": "<p>Hello from the <b>Python SDK</b></p>",
        "text": "Hello from the Python SDK",
        "reply_to": f"reply-{RUN}@example.test",
        "headers": {"X-Sdk-Check": RUN},
        "tags": tags,
        "attachments": [{"filename": "hello.txt", "content": base64.b64encode(TEXT_BYTES).decode()}],
    }
    key = f"sdk-py-{RUN}"

    def send():
        answer = resend.Emails.send(params, {"idempotency_key": key})
        expect(get(answer, "id"), "empty id")
        return answer["id"]

    email_id = step("Emails.send (base64 attachment, tags, headers, Idempotency-Key)", send)

    def replay():
        eq(get(resend.Emails.send(params, {"idempotency_key": key}), "id"), email_id, "id of the replayed send")

    step("Emails.send (same Idempotency-Key answers the same id)", replay, email_id)

    def send_bytes():
        answer = resend.Emails.send({
            "from": FROM, "to": DELIVERED, "subject": f"SDK bytes {RUN}", "text": "bytes",
            "attachments": [{"filename": "data.bin", "content": list(BINARY_BYTES), "content_type": "application/octet-stream"}],
        })
        return get(answer, "id")

    bytes_id = step("Emails.send (attachment content as a list of byte values)", send_bytes)

    def retrieve():
        email = resend.Emails.get(email_id)
        eq(get(email, "object"), "email", "object")
        eq(get(email, "id"), email_id, "id")
        eq(get(email, "from"), FROM, "from")
        eq(get(email, "to"), [DELIVERED], "to")
        eq((get(email, "cc"), get(email, "bcc")), ([CC], [BCC]), "cc and bcc")
        eq(get(email, "subject"), params["subject"], "subject")
        eq(get(email, "html"), params["html"], "html")
        eq(get(email, "text"), params["text"], "text")
        expect(get(email, "last_event") in ("queued", "sent", "delivered"), f"last_event is {email['last_event']!r}")
        eq(tag_map(get(email, "tags")), {t["name"]: t["value"] for t in tags}, "tags")
        if not isinstance(email["tags"], list):
            diverge("email.tags", "Emails.get", "`tags` is a name-to-value object; the SDK's type (and Resend) has a list of {name, value}")
        reply_to = get(email, "reply_to")
        eq(reply_to if isinstance(reply_to, list) else [reply_to], [params["reply_to"]], "reply_to")
        sdk_fields("email.fields", "Emails.get", email, ["message_id", "created_at", "scheduled_at"])

    step("Emails.get", retrieve, email_id)

    def list_emails():
        answer = resend.Emails.list({"limit": 100})
        listing("Emails.list", answer, "email")
        found = in_list(answer, "id", email_id, "the sent email")
        eq(found.get("subject"), params["subject"], "subject in the list")

    step("Emails.list", list_emails, email_id)

    def page():
        first = resend.Emails.list({"limit": 1})
        eq((len(get(first, "data")), get(first, "has_more")), (1, True), "one email and has_more")
        second = get(resend.Emails.list({"limit": 1, "after": first["data"][0]["id"]}), "data")
        expect(len(second) == 1 and second[0]["id"] != first["data"][0]["id"], "`after` did not move to the next email")

    step("Emails.list (limit, after)", page, email_id)

    def attachments():
        answer = resend.Emails.Attachments.list(email_id)
        listing("Emails.Attachments.list", answer, "email-attachment")
        found = in_list(answer, "filename", "hello.txt", "the attachment")
        eq(found.get("size"), len(TEXT_BYTES), "size")
        return found["id"]

    attachment_id = step("Emails.Attachments.list", attachments, email_id)

    def attachment():
        found = resend.Emails.Attachments.get(email_id, attachment_id)
        eq(get(found, "object"), "attachment", "object")
        eq(get(found, "filename"), "hello.txt", "filename")
        expect(get(found, "content_type").startswith("text/plain"), f"content_type is {found['content_type']!r}")
        eq(base64.b64decode(get(found, "content")), TEXT_BYTES, "content")
        sdk_fields("email-attachment.download_url", "Emails.Attachments.get", found, ["download_url", "expires_at", "content_disposition"])

    step("Emails.Attachments.get", attachment, email_id, attachment_id)

    def byte_attachment():
        listed = get(resend.Emails.Attachments.list(bytes_id), "data")
        eq(len(listed), 1, "attachments")
        found = resend.Emails.Attachments.get(bytes_id, listed[0]["id"])
        eq(base64.b64decode(get(found, "content")), BINARY_BYTES, "the bytes read back")

    step("Emails.Attachments.get (the byte-list attachment reads back the same bytes)", byte_attachment, bytes_id)

    def share():
        answer = resend.Emails.share(email_id, {"expires_in": "1h"})
        expect("/share/" in get(answer, "url"), f"url is {answer['url']!r}")
        if answer.get("id") != email_id:
            diverge("email-share.id", "Emails.share", f"`id` is the share's id ({answer.get('id')}), the SDK's type says the email's; the email's is `email_id` ({answer.get('email_id')})")
        eq(answer.get("email_id", answer.get("id")), email_id, "the shared email")

    step("Emails.share", share, email_id)

    def metrics():
        answer = resend.Emails.metrics()
        totals = answer.get("totals", answer)
        expect(isinstance(totals.get("received"), int) and totals["received"] >= 1, f"received is {totals.get('received')!r}")
        if "totals" not in answer:
            diverge("email-metrics.shape", "Emails.metrics", "counts are top-level (`object: email_metrics`); the SDK's type has `object: metrics`, `totals`, `metrics`, `dimensions`, `granularity`")

    step("Emails.metrics", metrics, email_id)

    def metrics_window():
        today = datetime.now(timezone.utc).date()
        answer = resend.Emails.metrics({"start_date": str(today - timedelta(days=1)), "end_date": str(today)})
        eq(get(answer, "start_date")[:10], str(today - timedelta(days=1)), "start_date")
        expect(answer.get("totals", answer).get("received", 0) >= 1, "nothing received in the window")

    step("Emails.metrics (start_date, end_date)", metrics_window, email_id)
    scheduled_emails()
    batch()


def scheduled_emails():
    at = iso_in(60)

    def send():
        answer = resend.Emails.send({"from": FROM, "to": [DELIVERED], "subject": f"SDK scheduled {RUN}", "text": "later", "scheduled_at": at})
        return get(answer, "id")

    email_id = step("Emails.send (scheduled_at)", send)

    def scheduled():
        email = resend.Emails.get(email_id)
        eq(get(email, "last_event"), "scheduled", "last_event")
        expect(same_instant(get(email, "scheduled_at"), at), f"scheduled_at is {email['scheduled_at']!r}, sent {at}")

    step("Emails.get (scheduled)", scheduled, email_id)
    later = iso_in(120)

    def reschedule():
        answer = resend.Emails.update({"id": email_id, "scheduled_at": later})
        eq(get(answer, "id"), email_id, "id")
        eq(get(answer, "object"), "email", "object")
        expect(same_instant(resend.Emails.get(email_id)["scheduled_at"], later), "scheduled_at did not change")

    step("Emails.update (reschedule)", reschedule, email_id)

    def cancel():
        answer = resend.Emails.cancel(email_id)
        eq(get(answer, "id"), email_id, "id")
        eq(get(answer, "object"), "email", "object")
        eq(resend.Emails.get(email_id)["last_event"], "canceled", "last_event after cancel")

    step("Emails.cancel", cancel, email_id)


def batch():
    items = [
        {"from": FROM, "to": [DELIVERED], "subject": f"SDK batch {i} {RUN}", "text": f"batch {i}", "tags": [{"name": "batch", "value": str(i)}]}
        for i in range(2)
    ]
    key = f"sdk-py-batch-{RUN}"

    def send():
        answer = resend.Batch.send(items, {"idempotency_key": key})
        ids = [get(one, "id") for one in get(answer, "data")]
        eq(len(ids), 2, "ids answered")
        eq(resend.Emails.get(ids[1])["subject"], items[1]["subject"], "second email's subject")
        return ids

    ids = step("Batch.send (Idempotency-Key)", send)

    def replay():
        eq([one["id"] for one in get(resend.Batch.send(items, {"idempotency_key": key}), "data")], ids, "ids of the replay")

    step("Batch.send (same Idempotency-Key answers the same ids)", replay, ids)

    def strict():
        answer = resend.Batch.send(items[:1], {"batch_validation": "strict"})
        eq(len(get(answer, "data")), 1, "ids answered")

    step("Batch.send (x-batch-validation: strict)", strict)

    def permissive():
        bad = {"from": FROM, "to": ["not-an-address"], "subject": f"SDK batch bad {RUN}", "text": "bad"}
        answer = resend.Batch.send([items[0], bad], {"batch_validation": "permissive"})
        eq(len(get(answer, "data")), 1, "ids answered (the valid email is sent)")
        errors = get(answer, "errors")
        eq([e.get("index") for e in errors], [1], "indexes of the refused emails")

    step("Batch.send (x-batch-validation: permissive: the valid emails go, `errors` names the rest)", permissive)


# --- domains -------------------------------------------------------------------------------------


def domains():
    name = f"sdk-{RUN}.test"

    def create():
        domain = resend.Domains.create({"name": name, "region": "us-east-1", "custom_return_path": "bounces"})
        eq(get(domain, "name"), name, "name")
        eq(get(domain, "region"), "us-east-1", "region")
        expect(get(domain, "status") != "verified", "a new domain is verified")
        records = get(domain, "records")
        expect(records and all({"record", "name", "type", "value", "ttl", "status"} <= set(r) for r in records), f"records: {clip(str(records))}")
        expect(any(r["record"].lower() == "dkim" for r in records), "no DKIM record")
        expect(any(r["name"].startswith("bounces") for r in records), "the return path is not `bounces`")
        return get(domain, "id")

    domain_id = step("Domains.create", create)

    def retrieve():
        domain = resend.Domains.get(domain_id)
        eq(get(domain, "object"), "domain", "object")
        eq((get(domain, "id"), get(domain, "name")), (domain_id, name), "id and name")
        expect(get(domain, "records"), "no records")

    step("Domains.get", retrieve, domain_id)

    def list_domains():
        answer = resend.Domains.list({"limit": 100})
        listing("Domains.list", answer, "domain")
        in_list(answer, "id", domain_id, "the new domain")
        in_list(answer, "id", DOMAIN_ID, "HERALD_DOMAIN_ID")

    step("Domains.list", list_domains, domain_id)

    def update():
        answer = resend.Domains.update({"id": domain_id, "open_tracking": True, "click_tracking": True, "tls": "enforced"})
        eq(get(answer, "id"), domain_id, "id")
        domain = resend.Domains.get(domain_id)
        eq((domain.get("open_tracking"), domain.get("click_tracking"), domain.get("tls")), (True, True, "enforced"), "tracking and tls after update")

    step("Domains.update", update, domain_id)

    def verify():
        answer = resend.Domains.verify(domain_id)
        eq(get(answer, "id"), domain_id, "id")
        status = get(answer, "status")
        expect(status in ("not_started", "pending", "failed", "temporary_failure"), f"an unpublished domain is {status!r}")

    step("Domains.verify (records not published: not verified)", verify, domain_id)

    def claim_get():
        not_found(lambda: resend.Domains.Claims.get(domain_id))

    step("Domains.Claims.get (no claim: 404)", claim_get, domain_id)

    def claim_create():
        refused(lambda: resend.Domains.Claims.create({"name": f"unheld-{RUN}.test"}), 422, "validation_error")

    step("Domains.Claims.create (no other team holds it: 422)", claim_create)

    def remove():
        answer = resend.Domains.remove(domain_id)
        eq((get(answer, "id"), get(answer, "deleted")), (domain_id, True), "id and deleted")
        not_found(lambda: resend.Domains.get(domain_id))

    step("Domains.remove", remove, domain_id)


# --- API keys ------------------------------------------------------------------------------------


def api_keys():
    name = f"sdk-py-{RUN}"

    def create():
        answer = resend.ApiKeys.create({"name": name, "permission": "sending_access", "domain_id": DOMAIN_ID})
        expect(get(answer, "token").startswith("rk_"), "the token does not start with rk_")
        return get(answer, "id"), answer["token"]

    created = step("ApiKeys.create (sending_access, pinned to HERALD_DOMAIN_ID)", create)
    key_id, token = created if created else (None, None)

    def send_with_it():
        resend.api_key = token
        try:
            get(resend.Emails.send({"from": FROM, "to": DELIVERED, "subject": f"SDK pinned key {RUN}", "text": "pinned"}), "id")
        finally:
            resend.api_key = API_KEY

    step("Emails.send (with the new sending key)", send_with_it, key_id)

    def list_keys():
        answer = resend.ApiKeys.list({"limit": 100})
        listing("ApiKeys.list", answer, "api-key")
        found = in_list(answer, "id", key_id, "the new key")
        eq(found.get("name"), name, "name")
        expect("last_used_at" in found and "created_at" in found, "no created_at or last_used_at")

    step("ApiKeys.list", list_keys, key_id)

    def update():
        answer = resend.ApiKeys.update({"id": key_id, "name": name + "-renamed"})
        eq(get(answer, "id"), key_id, "id")
        eq(in_list(resend.ApiKeys.list({"limit": 100}), "id", key_id, "the key")["name"], name + "-renamed", "name after update")

    step("ApiKeys.update", update, key_id)

    def remove():
        answer = resend.ApiKeys.remove(key_id)
        eq((get(answer, "id"), get(answer, "deleted")), (key_id, True), "id and deleted")

    step("ApiKeys.remove", remove, key_id)


# --- the audience: properties, topics, segments, contacts, imports, audiences --------------------


def contact_properties():
    key = f"sdk_plan_{RUN}"

    def create():
        answer = resend.ContactProperties.create({"key": key, "type": "string", "fallback_value": "free"})
        eq(get(answer, "object"), "contact_property", "object")
        return get(answer, "id")

    property_id = step("ContactProperties.create", create)

    def retrieve():
        found = resend.ContactProperties.get(property_id)
        eq((get(found, "id"), get(found, "key"), get(found, "type"), get(found, "fallback_value")), (property_id, key, "string", "free"), "property")

    step("ContactProperties.get", retrieve, property_id)

    def list_properties():
        answer = resend.ContactProperties.list()
        listing("ContactProperties.list", answer, "contact-property")
        eq(in_list(answer, "id", property_id, "the property")["key"], key, "key")

    step("ContactProperties.list", list_properties, property_id)

    def update():
        eq(get(resend.ContactProperties.update({"id": property_id, "fallback_value": "basic"}), "id"), property_id, "id")
        eq(resend.ContactProperties.get(property_id)["fallback_value"], "basic", "fallback_value after update")

    step("ContactProperties.update", update, property_id)
    return property_id, key if property_id else None


def remove_property(property_id):
    def remove():
        answer = resend.ContactProperties.remove(property_id)
        eq((get(answer, "id"), get(answer, "deleted")), (property_id, True), "id and deleted")
        not_found(lambda: resend.ContactProperties.get(property_id))

    step("ContactProperties.remove", remove, property_id)


def topics():
    name = f"SDK news {RUN}"

    def create():
        answer = resend.Topics.create({"name": name, "default_subscription": "opt_out", "description": "From the SDK check"})
        return get(answer, "id")

    topic_id = step("Topics.create", create)

    def retrieve():
        topic = resend.Topics.get(topic_id)
        eq((get(topic, "id"), get(topic, "name"), get(topic, "default_subscription"), get(topic, "description")),
           (topic_id, name, "opt_out", "From the SDK check"), "topic")

    step("Topics.get", retrieve, topic_id)

    def list_topics():
        answer = resend.Topics.list({"limit": 100})
        listing("Topics.list", answer, "topic")
        in_list(answer, "id", topic_id, "the topic")

    step("Topics.list", list_topics, topic_id)

    def update():
        eq(get(resend.Topics.update(topic_id, {"name": name + " (renamed)", "description": "Renamed"}), "id"), topic_id, "id")
        topic = resend.Topics.get(topic_id)
        eq((topic["name"], topic["description"]), (name + " (renamed)", "Renamed"), "name and description after update")

    step("Topics.update", update, topic_id)
    return topic_id


def remove_topic(topic_id):
    def remove():
        answer = resend.Topics.remove(topic_id)
        eq((get(answer, "id"), get(answer, "deleted")), (topic_id, True), "id and deleted")
        not_found(lambda: resend.Topics.get(topic_id))

    step("Topics.remove", remove, topic_id)


def segments():
    name = f"SDK segment {RUN}"

    def create():
        answer = resend.Segments.create({"name": name})
        sdk_fields("segment-create.name", "Segments.create", answer, ["name"])
        return get(answer, "id")

    segment_id = step("Segments.create", create)

    def retrieve():
        segment = resend.Segments.get(segment_id)
        eq((get(segment, "id"), get(segment, "name")), (segment_id, name), "segment")
        expect(get(segment, "created_at"), "no created_at")

    step("Segments.get", retrieve, segment_id)

    def list_segments():
        answer = resend.Segments.list({"limit": 100})
        listing("Segments.list", answer, "segment")
        in_list(answer, "id", segment_id, "the segment")

    step("Segments.list", list_segments, segment_id)

    def update():
        eq(get(resend.Segments.update(segment_id, {"name": name + " (renamed)"}), "id"), segment_id, "id")
        eq(resend.Segments.get(segment_id)["name"], name + " (renamed)", "name after update")

    step("Segments.update", update, segment_id)
    return segment_id


def remove_segment(segment_id, call="Segments.remove", remove=lambda i: resend.Segments.remove(i)):
    def run():
        answer = remove(segment_id)
        eq((get(answer, "id"), get(answer, "deleted")), (segment_id, True), "id and deleted")
        not_found(lambda: resend.Segments.get(segment_id))

    step(call, run, segment_id)


def contacts(property_key, topic_id, segment_id):
    address = f"sdk-{RUN}@example.test"

    def create():
        params = {"email": address, "first_name": "Ada", "last_name": "Lovelace", "unsubscribed": False}
        if property_key:
            params["properties"] = {property_key: "pro"}
        if segment_id:
            params["segments"] = [{"id": segment_id}]
        if topic_id:
            params["topics"] = [{"id": topic_id, "subscription": "opt_in"}]
        answer = resend.Contacts.create(params)
        eq(get(answer, "object"), "contact", "object")
        return get(answer, "id")

    contact_id = step("Contacts.create (properties, segments, topics)", create)

    def by_id():
        contact = resend.Contacts.get(id=contact_id)
        eq((get(contact, "id"), get(contact, "email"), get(contact, "first_name"), get(contact, "last_name"), get(contact, "unsubscribed")),
           (contact_id, address, "Ada", "Lovelace", False), "contact")
        expect(get(contact, "created_at"), "no created_at")
        if property_key:
            value = get(contact, "properties").get(property_key)
            if isinstance(value, dict):
                eq(value.get("value"), "pro", f"properties.{property_key}.value")
            else:
                eq(value, "pro", f"properties.{property_key}")
                diverge("contact.properties", "Contacts.get", "`properties` maps a key to its bare value; the SDK's type has {type, value} per key")

    step("Contacts.get (by id)", by_id, contact_id)

    def by_email():
        eq(get(resend.Contacts.get(email=address), "id"), contact_id, "id")

    step("Contacts.get (by email)", by_email, contact_id)

    def update_by_id():
        eq(get(resend.Contacts.update({"id": contact_id, "first_name": "Augusta"}), "id"), contact_id, "id")
        eq(resend.Contacts.get(id=contact_id)["first_name"], "Augusta", "first_name after update")

    step("Contacts.update (by id)", update_by_id, contact_id)

    def update_by_email():
        eq(get(resend.Contacts.update({"email": address, "last_name": "King"}), "id"), contact_id, "id")
        eq(resend.Contacts.get(email=address)["last_name"], "King", "last_name after update")

    step("Contacts.update (by email)", update_by_email, contact_id)

    def list_contacts():
        answer = resend.Contacts.list(params={"limit": 100})
        listing("Contacts.list", answer, "contact")
        in_list(answer, "id", contact_id, "the contact")

    step("Contacts.list", list_contacts, contact_id)

    def list_segment():
        answer = resend.Contacts.list(segment_id=segment_id, params={"limit": 100})
        listing("Contacts.list(segment_id)", answer, "contact")
        in_list(answer, "id", contact_id, "the segment's contact")

    step("Contacts.list (segment_id: GET /segments/{id}/contacts)", list_segment, contact_id, segment_id)
    contact_segments(contact_id, address, segment_id)
    contact_topics(contact_id, address, topic_id)

    def remove_by_id():
        answer = resend.Contacts.remove(id=contact_id)
        eq(get(answer, "deleted"), True, "deleted")
        if answer.get("contact") != contact_id:
            diverge("contact-remove.contact", "Contacts.remove", "the answer names the contact in `id`; the SDK's type (and Resend) has `contact`")
        eq(answer.get("contact", answer.get("id")), contact_id, "the removed contact")
        not_found(lambda: resend.Contacts.get(id=contact_id))

    step("Contacts.remove (by id)", remove_by_id, contact_id)

    other = f"sdk-other-{RUN}@example.test"
    other_id = step("Contacts.create (another)", lambda: get(resend.Contacts.create({"email": other}), "id"))

    def remove_by_email():
        eq(get(resend.Contacts.remove(email=other), "deleted"), True, "deleted")
        not_found(lambda: resend.Contacts.get(email=other))

    step("Contacts.remove (by email)", remove_by_email, other_id)


def contact_segments(contact_id, address, segment_id):
    def list_memberships():
        answer = resend.Contacts.Segments.list({"contact_id": contact_id})
        listing("Contacts.Segments.list", answer, "contact-segment")
        in_list(answer, "id", segment_id, "the segment given on create")

    step("Contacts.Segments.list", list_memberships, contact_id, segment_id)

    def remove():
        answer = resend.Contacts.Segments.remove({"segment_id": segment_id, "email": address})
        eq(get(answer, "deleted"), True, "deleted")
        data = get(resend.Contacts.Segments.list({"email": address}), "data")
        expect(all(s["id"] != segment_id for s in data), "the contact is still in the segment")

    step("Contacts.Segments.remove (by email)", remove, contact_id, segment_id)

    def add():
        answer = resend.Contacts.Segments.add({"segment_id": segment_id, "contact_id": contact_id})
        expect(get(answer, "id"), "empty id")
        in_list(resend.Contacts.Segments.list({"contact_id": contact_id}), "id", segment_id, "the segment added again")

    step("Contacts.Segments.add (by id)", add, contact_id, segment_id)


def contact_topics(contact_id, address, topic_id):
    def list_topics():
        answer = resend.Contacts.Topics.list(contact_id=contact_id)
        listing("Contacts.Topics.list", answer, "contact-topic")
        eq(in_list(answer, "id", topic_id, "the topic")["subscription"], "opt_in", "subscription chosen on create")

    step("Contacts.Topics.list", list_topics, contact_id, topic_id)

    def update():
        answer = resend.Contacts.Topics.update({"email": address, "topics": [{"id": topic_id, "subscription": "opt_out"}]})
        eq(get(answer, "id"), contact_id, "id")
        found = in_list(resend.Contacts.Topics.list(email=address), "id", topic_id, "the topic")
        eq(found["subscription"], "opt_out", "subscription after update")

    step("Contacts.Topics.update (by email)", update, contact_id, topic_id)


def contact_imports():
    address = f"sdk-import-{RUN}@example.test"
    csv = f"Email,Given name\n{address},Grace\n".encode()

    def create():
        answer = resend.Contacts.Imports.create({"file": csv, "filename": "contacts.csv", "column_map": {"email": "Email", "first_name": "Given name"}, "on_conflict": "upsert"})
        return get(answer, "id")

    import_id = step("Contacts.Imports.create", create)

    def retrieve():
        def done():
            found = resend.Contacts.Imports.get(import_id)
            expect(get(found, "status") in ("queued", "in_progress", "completed"), f"status is {found['status']!r}")
            return found if found["status"] == "completed" else None

        found = wait_for("the import to complete", done)
        eq((get(found, "id"), get(found, "counts").get("created")), (import_id, 1), "id and counts.created")
        eq(resend.Contacts.get(email=address)["first_name"], "Grace", "the imported contact's first_name")
        resend.Contacts.remove(email=address)

    step("Contacts.Imports.get", retrieve, import_id)

    def list_imports():
        answer = resend.Contacts.Imports.list({"limit": 100})
        listing("Contacts.Imports.list", answer, "contact-import")
        in_list(answer, "id", import_id, "the import")

    step("Contacts.Imports.list", list_imports, import_id)

    def list_completed():
        answer = resend.Contacts.Imports.list({"status": "completed", "limit": 100})
        in_list(answer, "id", import_id, "the completed import")
        expect(all(i["status"] == "completed" for i in answer["data"]), "an import of another status is listed")

    step("Contacts.Imports.list (status)", list_completed, import_id)


def audiences():
    """The legacy audience calls, which Herald serves as aliases of segments."""
    name = f"SDK audience {RUN}"

    def create():
        answer = resend.Audiences.create({"name": name})
        sdk_fields("audience-create.name", "Audiences.create", answer, ["name"])
        return get(answer, "id")

    audience_id = step("Audiences.create", create)

    def retrieve():
        found = resend.Audiences.get(audience_id)
        eq((get(found, "id"), get(found, "name")), (audience_id, name), "audience")

    step("Audiences.get", retrieve, audience_id)
    step("Segments.get (an audience is a segment)", lambda: eq(get(resend.Segments.get(audience_id), "name"), name, "name"), audience_id)

    def list_audiences():
        answer = resend.Audiences.list({"limit": 100})
        listing("Audiences.list", answer, "audience")
        in_list(answer, "id", audience_id, "the audience")

    step("Audiences.list", list_audiences, audience_id)

    address = f"sdk-audience-{RUN}@example.test"
    contact_id = step("Contacts.create (audience_id)",
                      lambda: get(resend.Contacts.create({"audience_id": audience_id, "email": address, "first_name": "Alan"}), "id"), audience_id)

    def in_audience():
        in_list(resend.Contacts.list(audience_id=audience_id), "id", contact_id, "the audience's contact")
        in_list(resend.Contacts.Segments.list({"contact_id": contact_id}), "id", audience_id, "the audience among the contact's segments")

    step("Contacts.list (audience_id)", in_audience, contact_id)

    def get_in_audience():
        found = resend.Contacts.get(audience_id=audience_id, id=contact_id)
        eq((get(found, "email"), get(found, "first_name")), (address, "Alan"), "contact")
        eq(get(resend.Contacts.get(audience_id=audience_id, email=address), "id"), contact_id, "id by email")

    step("Contacts.get (audience_id, by id and by email)", get_in_audience, contact_id)

    def update_in_audience():
        eq(get(resend.Contacts.update({"audience_id": audience_id, "id": contact_id, "last_name": "Turing"}), "id"), contact_id, "id")
        eq(resend.Contacts.get(id=contact_id)["last_name"], "Turing", "last_name after update")

    step("Contacts.update (audience_id)", update_in_audience, contact_id)

    def remove_in_audience():
        eq(get(resend.Contacts.remove(audience_id=audience_id, email=address), "deleted"), True, "deleted")
        not_found(lambda: resend.Contacts.get(id=contact_id))

    step("Contacts.remove (audience_id)", remove_in_audience, contact_id)
    remove_segment(audience_id, "Audiences.remove", lambda i: resend.Audiences.remove(i))


# --- suppressions --------------------------------------------------------------------------------


def suppressions():
    address = f"sdk-suppressed-{RUN}@example.test"

    def add():
        answer = resend.Suppressions.add({"email": address})
        return get(answer, "id")

    suppression_id = step("Suppressions.add", add)

    def by_id():
        found = resend.Suppressions.get(suppression_id)
        eq((get(found, "id"), get(found, "email"), get(found, "origin")), (suppression_id, address, "manual"), "suppression")

    step("Suppressions.get (by id)", by_id, suppression_id)
    step("Suppressions.get (by email)", lambda: eq(get(resend.Suppressions.get(address), "id"), suppression_id, "id"), suppression_id)

    def list_all():
        answer = resend.Suppressions.list({"origin": "manual", "limit": 100})
        listing("Suppressions.list", answer, "suppression")
        in_list(answer, "id", suppression_id, "the suppression")

    step("Suppressions.list (origin)", list_all, suppression_id)

    def remove():
        answer = resend.Suppressions.remove(address)
        eq(get(answer, "deleted"), True, "deleted")
        not_found(lambda: resend.Suppressions.get(suppression_id))

    step("Suppressions.remove (by email)", remove, suppression_id)
    batch = [f"sdk-batch-{i}-{RUN}@example.test" for i in range(2)]

    def batch_add():
        ids = [get(one, "id") for one in get(resend.Suppressions.Batch.add({"emails": batch}), "data")]
        eq(len(ids), 2, "suppressions answered")
        eq(sorted(resend.Suppressions.get(i)["email"] for i in ids), sorted(batch), "the suppressed addresses")
        return ids

    ids = step("Suppressions.Batch.add", batch_add)

    def remove_by_id():
        for one in ids:
            eq(get(resend.Suppressions.remove(one), "id"), one, "id")

    step("Suppressions.remove (by id)", remove_by_id, ids)

    def batch_remove():
        extra = [f"sdk-batch-rm-{i}-{RUN}@example.test" for i in range(2)]
        added = [get(one, "id") for one in get(resend.Suppressions.Batch.add({"emails": extra}), "data")]
        by_email = get(resend.Suppressions.Batch.remove({"emails": [extra[0], f"nobody-{RUN}@example.test"]}), "data")
        eq([(get(one, "object"), get(one, "id"), get(one, "deleted")) for one in by_email], [("suppression", added[0], True)], "removed by address (a miss is left out)")
        by_id = get(resend.Suppressions.Batch.remove({"ids": [added[1]]}), "data")
        eq([get(one, "id") for one in by_id], [added[1]], "removed by id")
        not_found(lambda: resend.Suppressions.get(added[1]))

    step("Suppressions.Batch.remove (by address, then by id)", batch_remove)


# --- logs ----------------------------------------------------------------------------------------


def logs():
    def list_logs():
        def mine():
            data = get(resend.Logs.list({"limit": 100}), "data")
            return [entry for entry in data if entry.get("user_agent", "").startswith("resend-python")]

        found = wait_for("a log of this SDK's requests", mine)
        entry = found[0]
        expect(entry.get("source") == "sdk:python", f"source is {entry.get('source')!r}")
        listing("Logs.list", resend.Logs.list({"limit": 1}), "log")
        return entry["id"]

    log_id = step("Logs.list", list_logs)

    def retrieve():
        entry = resend.Logs.get(log_id)
        eq(get(entry, "id"), log_id, "id")
        expect(get(entry, "method") in ("GET", "POST", "PATCH", "DELETE"), f"method is {entry['method']!r}")
        expect(get(entry, "endpoint").startswith("/"), f"endpoint is {entry['endpoint']!r}")
        expect(isinstance(get(entry, "response_status"), int), "response_status is not a number")
        expect(get(entry, "user_agent").startswith("resend-python:"), f"user_agent is {entry['user_agent']!r}")

    step("Logs.get", retrieve, log_id)


# --- webhooks ------------------------------------------------------------------------------------


def webhooks():
    receiver = Receiver()

    def self_signed():
        secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
        body = json.dumps({"type": "contact.created", "created_at": "2026-01-01T00:00:00Z", "data": {"id": "c1", "email": "a@example.test"}})
        msg_id, ts = f"evt_{RUN}", str(int(time.time()))
        payload = resend.Webhooks.verify({"payload": body, "headers": {"id": msg_id, "timestamp": ts, "signature": sign(secret, msg_id, ts, body)}, "webhook_secret": secret})
        eq(payload["data"]["email"], "a@example.test", "verified payload")
        try:
            resend.Webhooks.verify({"payload": body.replace("a@", "b@"), "headers": {"id": msg_id, "timestamp": ts, "signature": sign(secret, msg_id, ts, body)}, "webhook_secret": secret})
        except ValueError:
            return True
        raise Failed("a tampered body verified")

    step("Webhooks.verify (a payload signed here like Herald signs)", self_signed)

    def create():
        answer = resend.Webhooks.create({"endpoint": receiver.url, "events": ["contact.created"]})
        expect(get(answer, "signing_secret").startswith("whsec_"), "the secret does not start with whsec_")
        eq(get(answer, "object"), "webhook", "object")
        return get(answer, "id"), answer["signing_secret"]

    created = step("Webhooks.create (an endpoint on 127.0.0.1: needs HERALD_WEBHOOK_ALLOW_PRIVATE=true)", create)
    webhook_id, secret = created if created else (None, None)

    def retrieve():
        found = resend.Webhooks.get(webhook_id)
        eq((get(found, "id"), get(found, "endpoint"), get(found, "events"), get(found, "status")),
           (webhook_id, receiver.url, ["contact.created"], "enabled"), "webhook")

    step("Webhooks.get", retrieve, webhook_id)

    def list_webhooks():
        answer = resend.Webhooks.list({"limit": 100})
        listing("Webhooks.list", answer, "webhook")
        in_list(answer, "id", webhook_id, "the webhook")

    step("Webhooks.list", list_webhooks, webhook_id)

    def delivered(address):
        resend.Contacts.create({"email": address})
        return receiver.next(lambda h, b: b.get("type") == "contact.created" and b.get("data", {}).get("email") == address)

    def real_delivery():
        address = f"sdk-hook-{RUN}@example.test"
        headers, body = delivered(address)
        payload = resend.Webhooks.verify({"payload": body, "headers": standard_webhook_headers(headers), "webhook_secret": secret})
        eq(payload["data"]["email"], address, "verified payload's data.email")
        return headers["webhook-id"] if "webhook-id" in headers else None

    event_id = step("Webhooks.verify (a real delivery, with its webhook-* headers)", real_delivery, webhook_id)
    if event_id is None and webhook_id:
        # Read the event id from the list, so the event calls still run.
        event_id = step("Webhooks.list_events (to find the event)", lambda: get(resend.Webhooks.list_events(webhook_id), "data")[0]["id"], webhook_id)

    def list_events():
        answer = resend.Webhooks.list_events(webhook_id, {"limit": 100})
        listing("Webhooks.list_events", answer, "webhook-event")
        found = in_list(answer, "id", event_id, "the delivered event")
        eq(found.get("type"), "contact.created", "type")

    step("Webhooks.list_events", list_events, webhook_id, event_id)

    def attempts():
        def recorded():
            data = get(resend.Webhooks.list_event_attempts(webhook_id, event_id), "data")
            return data or None

        data = wait_for("the attempt to be recorded", recorded, 15)
        code = data[0].get("http_status_code", data[0].get("status_code"))
        eq(code, 200, "the attempt's status code")
        sdk_fields("webhook-attempt.fields", "Webhooks.list_event_attempts", data[0], ["http_status_code", "response", "sent_at"])

    step("Webhooks.list_event_attempts", attempts, webhook_id, event_id)

    def get_event():  # after the attempt is recorded, so its status is settled
        found = resend.Webhooks.get_event(webhook_id, event_id)
        eq((get(found, "id"), get(found, "type")), (event_id, "contact.created"), "event")
        sdk_fields("webhook-event.payload", "Webhooks.get_event", found, ["payload"])
        expect(found.get("status") in ("succeeded", "success"), f"status of a delivered event is {found.get('status')!r}")
        if found.get("status") not in ("pending", "attempting", "success", "failed"):
            diverge("webhook-event.status", "Webhooks.get_event", f"status {found.get('status')!r} is not one of the SDK's pending, attempting, success, failed")

    step("Webhooks.get_event", get_event, webhook_id, event_id)

    def replay():
        answer = resend.Webhooks.replay_event(webhook_id, event_id)
        eq(get(answer, "id"), event_id, "id")
        receiver.next(lambda h, b: h.get("webhook-id", h.get("hook-id")) == event_id, 15)

    step("Webhooks.replay_event (delivered again)", replay, webhook_id, event_id)

    def update():
        url = receiver.url + "?v=2"
        answer = resend.Webhooks.update({"webhook_id": webhook_id, "endpoint": url, "events": ["contact.created", "contact.deleted"], "status": "enabled"})
        eq(get(answer, "id"), webhook_id, "id")
        found = resend.Webhooks.get(webhook_id)
        eq((found["endpoint"], sorted(found["events"])), (url, ["contact.created", "contact.deleted"]), "endpoint and events after update")

    step("Webhooks.update", update, webhook_id)

    def rotate():
        answer = resend.Webhooks.rotate_signing_secret(webhook_id)
        new_secret = get(answer, "signing_secret")
        expect(new_secret.startswith("whsec_") and new_secret != secret, "no new secret")
        headers, body = delivered(f"sdk-hook-2-{RUN}@example.test")
        for one in (new_secret, secret):  # both sign for a day after a rotation
            resend.Webhooks.verify({"payload": body, "headers": standard_webhook_headers(headers), "webhook_secret": one})

    step("Webhooks.rotate_signing_secret (the next delivery verifies with both secrets)", rotate, webhook_id)

    def remove():
        answer = resend.Webhooks.remove(webhook_id)
        eq((get(answer, "id"), get(answer, "deleted")), (webhook_id, True), "id and deleted")
        not_found(lambda: resend.Webhooks.get(webhook_id))

    step("Webhooks.remove", remove, webhook_id)
    for address in (f"sdk-hook-{RUN}@example.test", f"sdk-hook-2-{RUN}@example.test"):
        try:
            resend.Contacts.remove(email=address)
        except ResendError:
            pass


# --- templates -----------------------------------------------------------------------------------

TEMPLATE_VARIABLES = [{"key": "NAME", "type": "string", "fallback_value": "friend"}, {"key": "COUNT", "type": "number", "fallback_value": 1}]


def templates():
    name, alias = f"SDK template {RUN}", f"sdk-py-{RUN}"
    params = {
        "name": name, "alias": alias, "from": FROM, "subject": "Hello {{NAME}}", "reply_to": f"template-{RUN}@example.test",
        "html": "<p>Hello {{NAME}}, you have {{COUNT}} messages</p>", "text": "Hello {{NAME}}, {{COUNT}} messages",
        "variables": TEMPLATE_VARIABLES,
    }

    def create():
        answer = resend.Templates.create(params)
        eq(get(answer, "object"), "template", "object")
        return get(answer, "id")

    template_id = step("Templates.create (alias, from, subject, reply_to, variables)", create)

    def by_id():
        found = resend.Templates.get(template_id)
        eq((get(found, "object"), get(found, "id"), get(found, "name"), get(found, "alias")), ("template", template_id, name, alias), "template")
        eq((get(found, "from"), get(found, "subject"), get(found, "html"), get(found, "text")),
           (FROM, params["subject"], params["html"], params["text"]), "from, subject, html and text")
        reply_to = get(found, "reply_to")
        eq(reply_to if isinstance(reply_to, list) else [reply_to], [params["reply_to"]], "reply_to")
        eq([{k: v.get(k) for k in ("key", "type", "fallback_value")} for v in get(found, "variables")], TEMPLATE_VARIABLES, "variables")
        eq(get(found, "status"), "draft", "status of a new template")
        sdk_fields("template.fields", "Templates.get", found, ["created_at", "updated_at", "published_at"])

    step("Templates.get (by id)", by_id, template_id)
    step("Templates.get (by alias)", lambda: eq(get(resend.Templates.get(alias), "id"), template_id, "id"), template_id)

    def draft_send():
        refused(lambda: resend.Emails.send({"to": [DELIVERED], "template": {"id": template_id}}), 422, "invalid_parameter")

    step("Emails.send (template still a draft: 422 invalid_parameter)", draft_send, template_id)

    def update():
        answer = resend.Templates.update({"id": template_id, "name": name + " (renamed)", "subject": "Hi {{NAME}}"})
        eq((get(answer, "object"), get(answer, "id")), ("template", template_id), "object and id")
        found = resend.Templates.get(template_id)
        eq((found["name"], found["subject"], found["html"]), (name + " (renamed)", "Hi {{NAME}}", params["html"]), "name, subject and html after update")

    step("Templates.update", update, template_id)

    def publish():
        answer = resend.Templates.publish(template_id)
        eq((get(answer, "object"), get(answer, "id")), ("template", template_id), "object and id")
        found = resend.Templates.get(template_id)
        eq(get(found, "status"), "published", "status after publish")
        expect(get(found, "published_at"), "no published_at after publish")

    published = step("Templates.publish", publish, template_id)

    def list_templates():
        answer = resend.Templates.list({"limit": 100})
        listing("Templates.list", answer, "template")
        found = in_list(answer, "id", template_id, "the template")
        eq((found.get("name"), found.get("alias"), found.get("status")), (name + " (renamed)", alias, "published"), "name, alias and status in the list")
        sdk_fields("template-list-item.fields", "Templates.list", found, ["id", "name", "status", "published_at", "created_at", "updated_at", "alias"])

    step("Templates.list", list_templates, template_id)

    def send_with(template, subject, html):
        answer = resend.Emails.send({"to": [DELIVERED], "template": template})
        email = resend.Emails.get(get(answer, "id"))
        eq((get(email, "from"), get(email, "subject")), (FROM, subject), "from and subject (from the template)")
        expect(html in (get(email, "html") or ""), f"html is {email['html']!r}, expected it to hold {html!r}")

    step("Emails.send (template: id and variables; Emails.get shows it rendered)",
         lambda: send_with({"id": template_id, "variables": {"NAME": "Ada", "COUNT": 3}}, "Hi Ada", "Hello Ada, you have 3 messages"), published)
    step("Emails.send (template by alias, no variables: the fallbacks)",
         lambda: send_with({"id": alias}, "Hi friend", "Hello friend, you have 1 messages"), published)

    def next_version():
        resend.Templates.update({"id": template_id, "html": "<p>Welcome {{NAME}}, {{COUNT}} new</p>"})
        found = resend.Templates.get(template_id)
        eq((found.get("html"), found.get("has_unpublished_versions")), ("<p>Welcome {{NAME}}, {{COUNT}} new</p>", True), "html and has_unpublished_versions")
        send_with({"id": template_id, "variables": {"NAME": "Ada", "COUNT": 3}}, "Hi Ada", "Hello Ada, you have 3 messages")
        resend.Templates.publish(template_id)
        send_with({"id": template_id, "variables": {"NAME": "Ada", "COUNT": 3}}, "Hi Ada", "Welcome Ada, 3 new")

    step("Templates.update (after publish: a new draft; sends keep the published version until Templates.publish)", next_version, published)

    def duplicate():
        answer = resend.Templates.duplicate(template_id)
        eq(get(answer, "object"), "template", "object")
        copy_id = get(answer, "id")
        expect(copy_id != template_id, "the copy has the original's id")
        found, original = resend.Templates.get(copy_id), resend.Templates.get(template_id)
        eq((get(found, "name"), get(found, "alias"), get(found, "html"), get(found, "status")),
           (original["name"] + " (copy)", None, original["html"], "draft"), "the copy's name, alias, html and status")
        return copy_id

    copy_id = step("Templates.duplicate", duplicate, template_id)
    for one, call in ((copy_id, "Templates.remove (the copy)"), (template_id, "Templates.remove")):
        remove_template(one, call)
    if template_id:
        step("Templates.get (by alias after remove: 404)", lambda: not_found(lambda: resend.Templates.get(alias)))


def remove_template(template_id, call="Templates.remove"):
    def remove():
        answer = resend.Templates.remove(template_id)
        eq((get(answer, "id"), get(answer, "deleted")), (template_id, True), "id and deleted")
        not_found(lambda: resend.Templates.get(template_id))

    step(call, remove, template_id)


def published_template(name, html, subject):
    """A published template without variables, for the broadcast and automation checks."""
    def create():
        template_id = get(resend.Templates.create({"name": name, "from": FROM, "subject": subject, "html": html}), "id")
        resend.Templates.publish(template_id)
        return template_id

    return step(f"Templates.create and Templates.publish ({name})", create)


# --- broadcasts ----------------------------------------------------------------------------------


def herald(method, path, body=None):
    """A plain request to Herald with the same key, for what no SDK call covers."""
    answer = requests.request(method, BASE_URL + path, json=body, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=30)
    expect(answer.ok, f"{method} {path} answered {answer.status_code} {clip(answer.text)}")
    return answer.json()


def sender_identity():
    """Broadcasts need the team's postal address (the compliance gate); sets one when absent."""
    def postal_address(team):
        return (get(team, "sender_identity") or {}).get("postal_address")

    def ensure():
        if not postal_address(herald("GET", "/team")):
            address = {"line1": "1 SDK Street", "city": "Berlin", "postal_code": "10115", "country": "DE"}
            team = herald("PATCH", "/team", {"postal_address": address})
            eq(postal_address(team).get("line1"), address["line1"], "sender_identity.postal_address.line1")

    return step("GET /team, PATCH /team (a postal address, the gate's second step; no SDK call covers it)", ensure)


def broadcast_audience():
    """A segment with one contact on the mailbox simulator."""
    address = f"delivered+broadcast-{RUN}@simulator.herald.test"
    segment_id = step("Segments.create (for the broadcasts)", lambda: get(resend.Segments.create({"name": f"SDK broadcast segment {RUN}"}), "id"))

    def contact():
        return get(resend.Contacts.create({"email": address, "first_name": "Grace", "segments": [{"id": segment_id}]}), "id")

    contact_id = step("Contacts.create (the broadcast segment's one contact)", contact, segment_id)
    return segment_id, contact_id, address


def broadcasts():
    segment_id, contact_id, address = broadcast_audience()
    identity = sender_identity()
    name = f"SDK broadcast {RUN}"
    params = {
        "name": name, "segment_id": segment_id, "from": FROM, "subject": f"SDK broadcast {RUN}", "preview_text": "From the SDK check",
        "html": '<p>Hello {{{FIRST_NAME|there}}}</p><p><a href="{{{UNSUBSCRIBE_URL}}}">Unsubscribe</a></p>',
        "text": "Hello {{{FIRST_NAME|there}}}\nUnsubscribe: {{{UNSUBSCRIBE_URL}}}",
    }

    def create():
        answer = resend.Broadcasts.create(params)
        eq(get(answer, "object"), "broadcast", "object")
        return get(answer, "id")

    broadcast_id = step("Broadcasts.create (a draft)", create, segment_id)

    def retrieve():
        found = resend.Broadcasts.get(broadcast_id)
        eq((get(found, "object"), get(found, "id"), get(found, "status")), ("broadcast", broadcast_id, "draft"), "object, id and status")
        for key in ("name", "segment_id", "from", "subject", "preview_text", "html", "text"):
            eq(get(found, key), params[key], key)
        sdk_fields("broadcast.fields", "Broadcasts.get", found, ["audience_id", "reply_to", "created_at", "scheduled_at", "sent_at", "topic_id"])

    step("Broadcasts.get", retrieve, broadcast_id)

    def update():
        answer = resend.Broadcasts.update({"broadcast_id": broadcast_id, "subject": params["subject"] + " (updated)"})
        eq(get(answer, "id"), broadcast_id, "id")
        eq(resend.Broadcasts.get(broadcast_id)["subject"], params["subject"] + " (updated)", "subject after update")

    step("Broadcasts.update (a draft)", update, broadcast_id)

    def list_broadcasts():
        answer = resend.Broadcasts.list({"limit": 100})
        listing("Broadcasts.list", answer, "broadcast")
        eq(in_list(answer, "id", broadcast_id, "the broadcast").get("status"), "draft", "status in the list")

    step("Broadcasts.list", list_broadcasts, broadcast_id)

    def send():
        answer = resend.Broadcasts.send({"broadcast_id": broadcast_id})
        eq(get(answer, "id"), broadcast_id, "id")

        def settled():
            found = resend.Broadcasts.get(broadcast_id)
            expect(found["status"] in ("queued", "sending", "sent"), f"status is {found['status']!r} (failed_reason {found.get('failed_reason')!r})")
            return found if found["status"] == "sent" else None

        found = wait_for("the broadcast to be sent", settled, 60)
        expect(get(found, "sent_at"), "no sent_at once sent")

    sent = step("Broadcasts.send (now; its status reaches sent)", send, broadcast_id, identity)

    def recipients():
        answer = resend.Broadcasts.recipients(broadcast_id, {"type": "sent"})
        listing("Broadcasts.recipients", answer, "broadcast-recipient")
        found = in_list(answer, "email", address, "the segment's contact")
        eq(found.get("contact_id"), contact_id, "contact_id")
        sdk_fields("broadcast-recipient.fields", "Broadcasts.recipients", found, ["id", "contact_id", "email"])
        email = resend.Emails.get(get(found, "email_id"))  # Herald's own field beside the SDK's
        eq(get(email, "subject"), params["subject"] + " (updated)", "the sent email's subject")
        expect("Hello Grace" in (get(email, "html") or ""), f"the sent html is {clip(str(email.get('html')))}")

    step("Broadcasts.recipients (type: sent; the email it created)", recipients, sent)

    def clicked_links():
        answer = resend.Broadcasts.clicked_links(broadcast_id)
        listing("Broadcasts.clicked_links", answer, "broadcast-clicked-link")
        eq(answer["data"], [], "clicked links (nobody clicked)")

    step("Broadcasts.clicked_links (none)", clicked_links, sent)

    def sent_is_final():
        refused(lambda: resend.Broadcasts.update({"broadcast_id": broadcast_id, "subject": "late"}), 422, "validation_error")
        refused(lambda: resend.Broadcasts.remove(broadcast_id), 422, "validation_error")

    step("Broadcasts.update and Broadcasts.remove (a sent broadcast: 422 validation_error)", sent_is_final, sent)

    def duplicate():
        answer = resend.Broadcasts.duplicate(broadcast_id)
        eq(get(answer, "object"), "broadcast", "object")
        copy = resend.Broadcasts.get(get(answer, "id"))
        eq((copy["status"], copy["name"], copy["subject"]), ("draft", name + " (copy)", params["subject"] + " (updated)"), "the copy's status, name and subject")
        return answer["id"]

    copy_id = step("Broadcasts.duplicate", duplicate, broadcast_id)

    def remove_draft():
        answer = resend.Broadcasts.remove(copy_id)
        eq((get(answer, "id"), get(answer, "deleted")), (copy_id, True), "id and deleted")
        not_found(lambda: resend.Broadcasts.get(copy_id))

    step("Broadcasts.remove (a draft)", remove_draft, copy_id)
    scheduled_broadcast(params, segment_id, identity)
    cleanup(lambda: resend.Contacts.remove(id=contact_id), lambda: resend.Segments.remove(segment_id))


def scheduled_broadcast(params, segment_id, identity):
    at = iso_in(60)

    def create():
        answer = resend.Broadcasts.create({**params, "name": f"SDK scheduled broadcast {RUN}", "send": True, "scheduled_at": at})
        found = resend.Broadcasts.get(get(answer, "id"))
        eq(get(found, "status"), "scheduled", "status")
        expect(same_instant(get(found, "scheduled_at"), at), f"scheduled_at is {found['scheduled_at']!r}, sent {at}")
        return answer["id"]

    broadcast_id = step("Broadcasts.create (send: true, scheduled_at)", create, segment_id, identity)

    def cancel():
        answer = resend.Broadcasts.cancel(broadcast_id)
        eq((get(answer, "object"), get(answer, "id")), ("broadcast", broadcast_id), "object and id")
        eq(resend.Broadcasts.get(broadcast_id)["status"], "canceled", "status after cancel")

    step("Broadcasts.cancel (scheduled)", cancel, broadcast_id)
    step("Broadcasts.remove (a canceled broadcast: 422 validation_error)",
         lambda: refused(lambda: resend.Broadcasts.remove(broadcast_id), 422, "validation_error"), broadcast_id)

    def send_later():
        draft_id = get(resend.Broadcasts.create({**params, "name": f"SDK broadcast sent later {RUN}"}), "id")
        eq(get(resend.Broadcasts.send({"broadcast_id": draft_id, "scheduled_at": at}), "id"), draft_id, "id")
        found = resend.Broadcasts.get(draft_id)
        eq(get(found, "status"), "scheduled", "status")
        expect(same_instant(get(found, "scheduled_at"), at), f"scheduled_at is {found['scheduled_at']!r}, sent {at}")
        eq(get(resend.Broadcasts.cancel(draft_id), "id"), draft_id, "id of the canceled broadcast")

    step("Broadcasts.send (a draft, scheduled_at; then canceled)", send_later, segment_id, identity)


def cleanup(*calls):
    """Removes what a family made for itself; a failure here is not the family's."""
    for call in calls:
        try:
            call()
        except (ResendError, KeyError, TypeError):
            pass


# --- receiving -----------------------------------------------------------------------------------

INBOUND_BYTES = b"Notes sent into Herald.\n"


def send_inbound(to, subject):
    """Sends one message into Herald's inbound SMTP server; answers its Message-ID."""
    message = EmailMessage()
    message["From"] = f"Inbound sender <sender-{RUN}@example.test>"
    message["To"] = to
    message["Subject"] = subject
    message["Message-ID"] = make_msgid(domain="example.test")
    message["X-Sdk-Check"] = RUN
    message.set_content("Hello from SMTP")
    message.add_alternative("<p>Hello from <b>SMTP</b></p>", subtype="html")
    message.add_attachment(INBOUND_BYTES, maintype="text", subtype="plain", filename="notes.txt")
    with smtplib.SMTP("127.0.0.1", SMTP_PORT, timeout=30) as smtp:
        smtp.send_message(message)
    return message["Message-ID"].strip("<>")


def on_server(url):
    """A download link on HERALD_BASE_URL: Herald writes links on its configured public URL, which in
    the test setup is not the address the server listens on (tests/tests/receiving.rs does the same)."""
    path = urllib.parse.urlsplit(url)
    expect(path.path.startswith("/received-attachments/"), f"download_url is {url!r}")
    return BASE_URL + path.path + (f"?{path.query}" if path.query else "")


def receiving():
    to = f"sdk-in-{RUN}@{FROM_DOMAIN}"
    subject = f"SDK inbound {RUN}"
    message_id = step("SMTP into Herald (127.0.0.1:HERALD_SMTP_PORT, with an attachment)", lambda: send_inbound(to, subject))

    def list_received():
        def arrived():
            answer = resend.Emails.Receiving.list({"limit": 100})
            return answer if any(item.get("subject") == subject for item in get(answer, "data")) else None

        answer = wait_for("the message in Emails.Receiving.list", arrived, 30)
        listing("Emails.Receiving.list", answer, "received-email")
        found = in_list(answer, "subject", subject, "the received message")
        eq((found.get("to"), found.get("message_id")), ([to], message_id), "to and message_id")
        expect(f"sender-{RUN}@example.test" in str(found.get("from")), f"from is {found.get('from')!r}")
        sdk_fields("received-email-list-item.fields", "Emails.Receiving.list", found,
                   ["id", "to", "from", "created_at", "subject", "bcc", "cc", "reply_to", "message_id", "attachments"])
        return found["id"]

    email_id = step("Emails.Receiving.list", list_received, message_id)

    def retrieve():
        found = resend.Emails.Receiving.get(email_id)
        eq((get(found, "object"), get(found, "id"), get(found, "subject"), get(found, "to")), ("email", email_id, subject, [to]), "object, id, subject and to")
        eq(get(found, "from"), f"Inbound sender <sender-{RUN}@example.test>", "from")
        eq((get(found, "message_id"), get(found, "received_for")), (message_id, [to]), "message_id and received_for")
        expect("Hello from <b>SMTP</b>" in (get(found, "html") or ""), f"html is {found['html']!r}")
        eq((get(found, "text") or "").strip(), "Hello from SMTP", "text")
        header = get(found, "headers").get("x-sdk-check", found["headers"].get("X-Sdk-Check"))
        if isinstance(header, list):
            eq(header, [RUN], "headers.x-sdk-check")
            diverge("received-email.headers", "Emails.Receiving.get", "`headers` maps each name to a list of its values; the SDK's type has Dict[str, str]")
        else:
            eq(header, RUN, "headers.x-sdk-check")
        attachment = next((a for a in get(found, "attachments") if a.get("filename") == "notes.txt"), None)
        expect(attachment, f"notes.txt is not among the attachments: {clip(str(found['attachments']))}")
        eq(attachment.get("size"), len(INBOUND_BYTES), "the attachment's size")
        sdk_fields("received-email.fields", "Emails.Receiving.get", found, ["created_at", "bcc", "cc", "reply_to"])

    step("Emails.Receiving.get", retrieve, email_id)

    def attachments():
        answer = resend.Emails.Receiving.Attachments.list(email_id)
        listing("Emails.Receiving.Attachments.list", answer, "received-attachment")
        found = in_list(answer, "filename", "notes.txt", "the attachment")
        eq((found.get("size"), found.get("content_disposition")), (len(INBOUND_BYTES), "attachment"), "size and content_disposition")
        expect(str(found.get("content_type")).startswith("text/plain"), f"content_type is {found.get('content_type')!r}")
        sdk_fields("received-attachment.fields", "Emails.Receiving.Attachments.list", found, ["id", "content_type", "content_disposition", "size", "download_url", "expires_at"])
        download = requests.get(on_server(get(found, "download_url")), timeout=30)  # no Authorization: the link is the credential
        eq((download.status_code, download.content), (200, INBOUND_BYTES), "the downloaded bytes")
        return found["id"]

    attachment_id = step("Emails.Receiving.Attachments.list (download_url answers the bytes)", attachments, email_id)

    def attachment():
        found = resend.Emails.Receiving.Attachments.get(email_id, attachment_id)
        eq((get(found, "object"), get(found, "id"), get(found, "filename")), ("attachment", attachment_id, "notes.txt"), "object, id and filename")
        eq(requests.get(on_server(get(found, "download_url")), timeout=30).content, INBOUND_BYTES, "the downloaded bytes")

    step("Emails.Receiving.Attachments.get", attachment, email_id, attachment_id)


# --- custom events and automations ---------------------------------------------------------------


def events():
    name = f"sdk.signup.{RUN}"
    schema = {"plan": "string", "seats": "number"}

    def create():
        answer = resend.Events.create({"name": name, "schema": schema})
        eq(get(answer, "object"), "event", "object")
        return get(answer, "id")

    event_id = step("Events.create (a schema)", create)

    def retrieve():
        for identifier in (event_id, name):
            found = resend.Events.get(identifier)
            eq((get(found, "object"), get(found, "id"), get(found, "name"), get(found, "schema")), ("event", event_id, name, schema), f"the event by {identifier}")
            sdk_fields("event.fields", "Events.get", found, ["created_at", "updated_at"])

    step("Events.get (by id and by name)", retrieve, event_id)

    def list_events():
        answer = resend.Events.list({"limit": 100})
        listing("Events.list", answer, "event")
        found = in_list(answer, "id", event_id, "the event")
        eq((found.get("name"), found.get("schema")), (name, schema), "name and schema in the list")
        sdk_fields("event-list-item.fields", "Events.list", found, ["id", "name", "schema", "created_at", "updated_at"])

    step("Events.list", list_events, event_id)
    schema = {**schema, "trial": "boolean"}

    def update():
        answer = resend.Events.update({"identifier": name, "schema": schema})
        eq((get(answer, "object"), get(answer, "id")), ("event", event_id), "object and id")
        eq(resend.Events.get(event_id)["schema"], schema, "schema after update")

    step("Events.update (the whole schema)", update, event_id)

    return (event_id, name) if event_id else (None, None)


def automations(event_name):
    address = f"delivered+automation-{RUN}@simulator.herald.test"
    subject = f"SDK automation {RUN}"
    template_id = published_template(f"SDK automation template {RUN}", "<p>Welcome aboard</p>", subject)
    contact_id = step("Contacts.create (the automation's contact)", lambda: get(resend.Contacts.create({"email": address}), "id"))

    def wrong_type():
        refused(lambda: resend.Events.send({"event": event_name, "email": address, "payload": {"seats": "many"}}), 422, "validation_error")

    step("Events.send (a payload key of the wrong type: 422 validation_error)", wrong_type, event_name, contact_id)
    name = f"SDK automation {RUN}"
    steps = [
        {"key": "start", "type": "trigger", "config": {"event_name": event_name}},
        {"key": "welcome", "type": "send_email", "config": {"template": {"id": template_id}, "from": FROM, "subject": subject}},
    ]
    connections = [{"from": "start", "to": "welcome"}]

    def create():
        answer = resend.Automations.create({"name": name, "status": "enabled", "steps": steps, "connections": connections})
        eq(get(answer, "object"), "automation", "object")
        return get(answer, "id")

    automation_id = step("Automations.create (trigger on the custom event, send_email with a template)", create, event_name, template_id)

    def retrieve():
        found = resend.Automations.get(automation_id)
        eq((get(found, "object"), get(found, "id"), get(found, "name"), get(found, "status")), ("automation", automation_id, name, "enabled"), "automation")
        eq([(s.get("key"), s.get("type")) for s in get(found, "steps")], [("start", "trigger"), ("welcome", "send_email")], "steps")
        eq(found["steps"][0].get("config", {}).get("event_name"), event_name, "the trigger's event_name")
        eq([(c.get("from"), c.get("to"), c.get("type", "default")) for c in get(found, "connections")], [("start", "welcome", "default")], "connections")
        sdk_fields("automation.fields", "Automations.get", found, ["created_at", "updated_at"])

    step("Automations.get", retrieve, automation_id)

    def list_automations():
        answer = resend.Automations.list({"limit": 100})
        listing("Automations.list", answer, "automation")
        found = in_list(answer, "id", automation_id, "the automation")
        eq((found.get("name"), found.get("status")), (name, "enabled"), "name and status in the list")
        sdk_fields("automation-list-item.fields", "Automations.list", found, ["id", "name", "status", "created_at", "updated_at"])

    step("Automations.list", list_automations, automation_id)

    def update():
        eq(get(resend.Automations.update({"automation_id": automation_id, "name": name + " (renamed)"}), "id"), automation_id, "id")
        eq(resend.Automations.get(automation_id)["name"], name + " (renamed)", "name after update")

    step("Automations.update (rename)", update, automation_id)

    def new_version():
        changed = [steps[0], {**steps[1], "config": {**steps[1]["config"], "subject": subject + " (v2)"}}]
        answer = resend.Automations.update({"automation_id": automation_id, "steps": changed, "connections": connections})
        eq(get(answer, "id"), automation_id, "id")
        found = resend.Automations.get(automation_id)
        eq(found["steps"][1].get("config", {}).get("subject"), subject + " (v2)", "the send_email step's subject after update")
        eq(found.get("version"), 2, "version")

    step("Automations.update (steps and connections: the next version)", new_version, automation_id)

    def fire():
        answer = resend.Events.send({"event": event_name, "email": address, "payload": {"plan": "pro", "seats": 3}})
        eq((get(answer, "object"), get(answer, "event")), ("event", event_name), "object and event")

    fired = step("Events.send (for a contact, by email)", fire, automation_id, contact_id)
    run_id = automation_runs(automation_id, subject + " (v2)", fired)

    def stop():
        answer = resend.Automations.stop(automation_id)
        eq((get(answer, "object"), get(answer, "id"), get(answer, "status")), ("automation", automation_id, "disabled"), "object, id and status")
        eq(resend.Automations.get(automation_id)["status"], "disabled", "status after stop")

    step("Automations.stop", stop, automation_id)

    def duplicate():
        answer = resend.Automations.duplicate(automation_id)
        eq(get(answer, "object"), "automation", "object")
        copy_id = get(answer, "id")
        expect(copy_id != automation_id, "the copy has the original's id")
        copy = resend.Automations.get(copy_id)
        eq([s["key"] for s in copy["steps"]], [s["key"] for s in resend.Automations.get(automation_id)["steps"]], "the copy's steps")
        eq(copy["status"], "disabled", "the copy's status")
        resend.Automations.remove(copy_id)

    step("Automations.duplicate", duplicate, automation_id)

    def remove():
        answer = resend.Automations.remove(automation_id)
        eq((get(answer, "id"), get(answer, "deleted")), (automation_id, True), "id and deleted")
        not_found(lambda: resend.Automations.get(automation_id))
        if run_id:
            not_found(lambda: resend.Automations.Runs.get(automation_id, run_id))

    step("Automations.remove", remove, automation_id)
    cleanup(lambda: resend.Contacts.remove(email=address))
    remove_template(template_id, "Templates.remove (the automation's)")


def automation_runs(automation_id, subject, fired):
    def list_runs():
        def completed():
            data = get(resend.Automations.Runs.list(automation_id), "data")
            expect(all(r.get("status") in ("running", "completed") for r in data), f"runs: {clip(str(data))}")
            return data if data and data[0]["status"] == "completed" else None

        data = wait_for("the run to complete", completed, 60)
        eq(len(data), 1, "runs (one event, one run)")
        answer = resend.Automations.Runs.list(automation_id, {"status": "completed,failed", "limit": 10})
        listing("Automations.Runs.list", answer, "automation-run")
        in_list(answer, "id", data[0]["id"], "the completed run")
        refused(lambda: resend.Automations.Runs.list(automation_id, {"status": "done"}), 422, "invalid_parameter")
        sdk_fields("automation-run-list-item.fields", "Automations.Runs.list", data[0], ["id", "status", "started_at", "completed_at", "created_at"])
        return data[0]["id"]

    run_id = step("Automations.Runs.list (the event's run completes; status filter; an unknown status: 422)", list_runs, automation_id, fired)

    def retrieve():
        found = resend.Automations.Runs.get(automation_id, run_id)
        eq((get(found, "object"), get(found, "id"), get(found, "status")), ("automation_run", run_id, "completed"), "object, id and status")
        expect(get(found, "completed_at"), "no completed_at")
        sdk_fields("automation-run.fields", "Automations.Runs.get", found, ["started_at", "completed_at", "created_at", "steps"])
        run_steps = get(found, "steps")
        eq([(s.get("key"), s.get("type")) for s in run_steps], [("start", "trigger"), ("welcome", "send_email")], "the run's steps")
        sdk_fields("automation-run-step.fields", "Automations.Runs.get", run_steps[1], ["key", "type", "status", "started_at", "completed_at", "output", "error", "created_at"])
        outcome = run_steps[1].get("output") or run_steps[1].get("outcome") or {}
        expect(outcome.get("email_id"), f"the send_email step names no email_id: {clip(str(run_steps[1]))}")
        eq(resend.Emails.get(outcome["email_id"]).get("subject"), subject, "the subject of the email the run sent")

    step("Automations.Runs.get (its steps; the email it sent)", retrieve, run_id)
    return run_id


def remove_event(event_id, name):
    def remove():
        answer = resend.Events.remove(name)
        eq((get(answer, "id"), get(answer, "deleted")), (event_id, True), "id and deleted")
        not_found(lambda: resend.Events.get(event_id))
        not_found(lambda: resend.Events.send({"event": name, "email": f"nobody-{RUN}@example.test"}))

    step("Events.remove (by name; then get and send answer 404)", remove, event_id)


# --- main ----------------------------------------------------------------------------------------


def main():
    print(f"Resend Python SDK {resend.__version__} against {BASE_URL} (run {RUN})", flush=True)
    webhooks()
    emails()
    domains()
    api_keys()
    property_id, property_key = contact_properties()
    topic_id = topics()
    segment_id = segments()
    contacts(property_key, topic_id, segment_id)
    contact_imports()
    audiences()
    remove_segment(segment_id)
    remove_topic(topic_id)
    remove_property(property_id)
    suppressions()
    templates()
    broadcasts()
    receiving()
    event_id, event_name = events()
    automations(event_name)
    remove_event(event_id, event_name)
    logs()
    print(f"\n{len(failures)} failed, {len(skipped)} skipped, {len(divergences)} listed divergences from the SDK's types", flush=True)
    for name in failures:
        print(f"  failed: {name}")
    for name in skipped:
        print(f"  skipped: {name}")
    for line in divergences:
        print(f"  diverges: {line}")
    sys.exit(1 if failures or skipped else 0)


if __name__ == "__main__":
    main()
