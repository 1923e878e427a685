#!/usr/bin/env python3
"""Generates a Python client from Herald's OpenAPI document with `openapi-python-client` 0.29
and drives a live Herald server through it.

1. `openapi-python-client generate` on `openapi/openapi.json` into a temporary directory. The
   run fails if the generator prints any warning, or if any operation or object/enum schema of
   the document has no generated module (the generator drops what it cannot read).
2. The generated package is imported, and one of each resource is created (API key, domain and
   sends through the generated client; the rest with plain httpx), so that every `GET` route
   has a real id to fetch.
3. Every `GET` operation of the document is called through the generated client with
   `raise_on_unexpected_status=True`. Each must answer 200 (the hosted pages: 200 with HTML)
   and parse into its generated model; a parsed answer must carry no field the document does
   not declare (`additional_properties` empty at every depth), and must serialize back to the
   JSON the server sent.

One line per check: `ok <what>` or `FAIL <what>: <why>`; exit status 1 when anything failed,
after running everything.

Environment:
  HERALD_BASE_URL      the server, e.g. http://127.0.0.1:18082
  HERALD_API_KEY       a full_access key of the team (rk_...)
  HERALD_FROM_DOMAIN   a domain verified on the team (mail goes from generated@<it> to the
                       mailbox simulator)
  HERALD_OPENAPI       optional; the document (default: openapi/openapi.json of this checkout)

The server must allow webhook endpoints on loopback (HERALD_WEBHOOK_ALLOW_PRIVATE=true): the
check receives real deliveries on 127.0.0.1 so that an event has attempts to list.

`GET /domains/{domain_id}/claim` is called for a domain without a claim and must answer the
documented `404 not_found` `Error`: a claim needs another team holding the name, which one
team's API key cannot set up.
"""

import base64
import http.server
import importlib
import attrs
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
USER_AGENT = "herald-generated-client-check/1.0"
PACKAGE = "herald_api_client"
FAILURES = []


def env(name, default=None):
    value = os.environ.get(name, "").strip()
    if value:
        return value
    if default is not None:
        return default
    sys.exit(f"{name} is not set")


def ok(what):
    print(f"ok {what}", flush=True)


def fail(what, why):
    FAILURES.append(what)
    print(f"FAIL {what}: {why}", flush=True)


def snake(name):
    """openapi-python-client's module name for an operationId or schema name."""
    name = re.sub(r"[^0-9A-Za-z]+", "_", name)
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return name.strip("_").lower()


# --- 1. generate ------------------------------------------------------------------------------


def generator():
    """The `openapi-python-client` installed beside this Python."""
    candidate = Path(sys.executable).parent / "openapi-python-client"
    if candidate.exists():
        return [str(candidate)]
    found = shutil.which("openapi-python-client")
    if found:
        return [found]
    sys.exit("openapi-python-client is not installed (scripts/test installs it into .venv/)")


def generate(document, workdir):
    config = workdir / "config.yaml"
    # No post hooks: formatting the output (ruff) is not what is checked here.
    config.write_text("post_hooks: []\n")
    out = workdir / PACKAGE
    command = generator() + [
        "generate", "--path", str(document), "--meta", "none", "--output-path", str(out), "--config", str(config),
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    said = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        fail("generate", f"exit {done.returncode}\n{said}")
        return None
    noise = [line for line in said.splitlines() if line.strip() and line.strip() != f"Generating {out}"]
    if any(re.search(r"warning|unable|will not be generated|removal of|omitted|cannot|could not", line, re.I) for line in noise):
        fail("generate without warnings", "\n" + said)
    else:
        ok("generate without warnings")
    return out


def check_coverage(spec, out):
    """Every operation has an endpoint module and every object or enum schema a model module."""
    endpoints = {path.stem for path in (out / "api").rglob("*.py") if path.stem != "__init__"}
    missing = []
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if isinstance(operation, dict) and "operationId" in operation:
                if snake(operation["operationId"]) not in endpoints:
                    missing.append(f"{method.upper()} {path} ({operation['operationId']})")
    if missing:
        fail("every operation generated", "dropped: " + ", ".join(missing))
    else:
        ok(f"every operation generated ({sum(1 for _ in endpoints)} endpoints)")
    models = {path.stem for path in (out / "models").glob("*.py")}
    dropped = []
    for name, schema in spec["components"]["schemas"].items():
        if schema.get("type") == "object" or "enum" in schema:
            if snake(name) not in models:
                dropped.append(name)
    if dropped:
        fail("every schema generated", "dropped: " + ", ".join(dropped))
    else:
        ok(f"every object and enum schema generated ({len(models) - 1} models)")


# --- 2. resources ----------------------------------------------------------------------------


class Receiver(http.server.BaseHTTPRequestHandler):
    """Answers every webhook delivery 200."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


def start_receiver():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def expect(response, status, what):
    if response.status_code != status:
        raise AssertionError(f"{what}: expected {status}, got {response.status_code}: {response.text[:500]}")
    return response.json() if response.content and "json" in response.headers.get("content-type", "") else None


def poll(what, fetch, seconds=30):
    """Calls `fetch` until it returns something truthy."""
    deadline = time.monotonic() + seconds
    while True:
        found = fetch()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: nothing after {seconds} s")
        time.sleep(0.5)


def create_resources(client, raw, gen, from_domain):
    """One of each resource; returns the values of the path parameters, keyed by operation."""
    models = gen.models
    run = uuid.uuid4().hex[:8]
    ids = {}

    # Through the generated client: the operations the generator used to drop.
    create_api_key = importlib.import_module(f"{PACKAGE}.api.api_keys.create_api_key")
    created = create_api_key.sync_detailed(client=client, body=models.CreateApiKey(name=f"generated {run}"))
    if created.status_code != 201 or not isinstance(created.parsed, models.CreatedApiKey):
        raise AssertionError(f"create-api-key: {created.status_code} {created.content[:300]!r}")
    ids["api_key_id"] = created.parsed.id
    ok("create-api-key (generated client)")

    create_domain = importlib.import_module(f"{PACKAGE}.api.domains.create_domain")
    created = create_domain.sync_detailed(
        client=client, body=models.CreateDomain(name=f"gen-{run}.example.com", tls=models.Tls.OPPORTUNISTIC)
    )
    if created.status_code != 201 or not isinstance(created.parsed, models.DomainView):
        raise AssertionError(f"create-domain: {created.status_code} {created.content[:300]!r}")
    ids["domain_id"] = created.parsed.id
    ok("create-domain (generated client)")

    send_email = importlib.import_module(f"{PACKAGE}.api.emails.send_email")
    body = models.SendEmail.from_dict({
        "from": f"Generated <generated@{from_domain}>",
        "to": ["delivered@simulator.herald.test"],
        "subject": f"generated client {run}",
        "text": "Sent through the client generated from the OpenAPI document.",
        "attachments": [{"filename": "note.txt", "content": base64.b64encode(b"line one\nline two\n").decode()}],
        "tags": [{"name": "run", "value": run}],
    })
    sent = send_email.sync_detailed(client=client, body=body, idempotency_key=f"generated-{run}")
    if sent.status_code != 200 or not isinstance(sent.parsed, models.Sent):
        raise AssertionError(f"send-email: {sent.status_code} {sent.content[:300]!r}")
    ids["email_id"] = sent.parsed.id
    replay = send_email.sync_detailed(client=client, body=body, idempotency_key=f"generated-{run}")
    if not isinstance(replay.parsed, models.Sent) or replay.parsed.id != sent.parsed.id:
        raise AssertionError(f"send-email replay: {replay.status_code} {replay.content[:300]!r}")
    ok("send-email and its idempotent replay (generated client)")

    send_batch = importlib.import_module(f"{PACKAGE}.api.emails.send_batch_emails")
    batch = send_batch.sync_detailed(client=client, body=[
        models.SendEmail.from_dict({
            "from": f"generated@{from_domain}", "to": "delivered@simulator.herald.test",
            "subject": f"generated batch {run} {i}", "html": "<p>batch</p>",
        })
        for i in range(2)
    ])
    if batch.status_code != 200 or not isinstance(batch.parsed, models.SentBatch) or len(batch.parsed.data) != 2:
        raise AssertionError(f"send-batch-emails: {batch.status_code} {batch.content[:300]!r}")
    ok("send-batch-emails (generated client)")

    # With plain httpx: the rest.
    attachments = expect(raw.get(f"/emails/{ids['email_id']}/attachments"), 200, "list attachments")
    ids["attachment_id"] = attachments["data"][0]["id"]
    ids["sent_download_token"] = attachments["data"][0]["download_url"].rstrip("/").rsplit("/", 1)[-1]
    share = expect(raw.post(f"/emails/{ids['email_id']}/share", json={}), 200, "share")
    ids["share_token"] = share["url"].rstrip("/").rsplit("/", 1)[-1]

    receiver = start_receiver()
    webhook = expect(raw.post("/webhooks", json={
        "endpoint": f"http://127.0.0.1:{receiver.server_port}/hook",
        "events": ["contact.created", "contact.updated", "email.sent", "email.delivered"],
    }), 201, "create webhook")
    ids["webhook_id"] = webhook["id"]

    topic = expect(raw.post("/topics", json={
        "name": f"gen {run}", "default_subscription": "opt_in", "visibility": "public", "description": "generated",
    }), 201, "create topic")
    ids["topic_id"] = topic["id"]
    prop = expect(raw.post("/contact-properties", json={
        "key": f"gen_{run}", "type": "string", "fallback_value": "none",
    }), 201, "create contact property")
    ids["property_id"] = prop["id"]
    segment = expect(raw.post("/segments", json={"name": f"gen {run}"}), 201, "create segment")
    ids["segment_id"] = segment["id"]
    contact = expect(raw.post("/contacts", json={
        "email": f"gen-{run}@example.com", "first_name": "Gen", "properties": {f"gen_{run}": "x"},
        "segments": [{"id": segment["id"]}], "topics": [{"id": topic["id"], "subscription": "opt_out"}],
    }), 201, "create contact")
    ids["contact"] = contact["id"]
    full = expect(raw.get(f"/contacts/{contact['id']}"), 200, "get contact")
    ids["preferences_token"] = full["preferences_url"].rstrip("/").rsplit("/", 1)[-1]
    ids["unsubscribe_token"] = full["unsubscribe_url"].rstrip("/").rsplit("/", 1)[-1]
    expect(raw.post("/suppressions", json={"email": f"gen-suppressed-{run}@example.com"}), 201, "add suppression")
    ids["suppression"] = f"gen-suppressed-{run}@example.com"
    imported = expect(raw.post(
        "/contacts/imports",
        files={"file": ("contacts.csv", f"email,first_name\ngen-import-{run}@example.com,Imp\nnot-an-address,Bad\n", "text/csv")},
    ), 201, "import contacts")
    ids["import_id"] = imported["id"]
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
    asset = expect(raw.post("/team/brand-kit/uploads", files={"file": ("logo.png", png, "image/png")}), 201, "upload brand asset")
    ids["asset_id"] = asset["id"]
    saved = expect(raw.post("/saved-blocks", json={"name": f"gen {run}", "content": {"type": "text", "text": "Bye"}}), 201, "save block")
    ids["saved_block_id"] = saved["id"]
    template = expect(raw.post("/templates", json={
        "name": f"gen {run}", "alias": f"gen-{run}", "starter": "welcome",
    }), 201, "create template")
    ids["template_id"] = template["id"]
    ids["version"] = "1"
    expect(raw.post(f"/templates/{template['id']}/publish", json={}), 200, "publish template")
    broadcast = expect(raw.post("/broadcasts", json={
        "name": f"gen {run}", "from": f"Generated <generated@{from_domain}>", "subject": "News",
        "segment_id": segment["id"], "html": "<p>Hi {{{FIRST_NAME|there}}}</p>",
    }), 201, "create broadcast")
    ids["broadcast_id"] = broadcast["id"]
    event_name = f"gen.{run}"
    expect(raw.post("/events", json={"name": event_name, "schema": {"plan": "string"}}), 201, "define event")
    ids["id_or_name"] = event_name
    automation = expect(raw.post("/automations", json={
        "name": f"gen {run}", "status": "enabled",
        "steps": [{"key": "start", "type": "trigger", "config": {"event_name": event_name}},
                  {"key": "wait", "type": "delay", "config": {"duration": "1 day"}}],
        "connections": [{"from": "start", "to": "wait"}],
    }), 201, "create automation")
    ids["automation_id"] = automation["id"]
    fired = expect(raw.post("/events/send", json={"event": event_name, "contact_id": contact["id"], "payload": {"plan": "pro"}}), 202, "send event")
    ids["run_id"] = fired["runs"][0]["id"]

    event = poll("a webhook event", lambda: expect(raw.get(f"/webhooks/{ids['webhook_id']}/events"), 200, "events")["data"])
    ids["event_id"] = event[0]["id"]
    poll("a webhook attempt", lambda: expect(
        raw.get(f"/webhooks/{ids['webhook_id']}/events/{ids['event_id']}/attempts"), 200, "attempts")["data"])
    log = poll("a request log", lambda: expect(raw.get("/logs"), 200, "logs")["data"])
    ids["log_id"] = log[0]["id"]
    ids["audience_id"] = ids["segment_id"]

    # A received email: receiving on for the sending domain, one message over SMTP.
    expect(raw.patch(f"/domains/{os.environ['HERALD_DOMAIN_ID']}", json={"capabilities": {"receiving": "enabled"}}), 200, "receiving on")
    import smtplib
    from email.message import EmailMessage
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "sender@example.com", f"inbox@{from_domain}", f"received {run}"
    message.set_content("A message to the receiving domain.")
    message.add_attachment(b"attached", maintype="application", subtype="pdf", filename="a.pdf")
    with smtplib.SMTP("127.0.0.1", int(os.environ["HERALD_SMTP_PORT"])) as smtp:
        smtp.send_message(message)
    received = expect(raw.get("/emails/receiving", params={"search": f"received {run}"}), 200, "received")["data"]
    ids["received_email_id"] = received[0]["id"]
    one = expect(raw.get(f"/emails/receiving/{ids['received_email_id']}"), 200, "received email")
    ids["raw_token"] = one["raw"]["download_url"].rstrip("/").rsplit("/", 1)[-1]
    parts = expect(raw.get(f"/emails/receiving/{ids['received_email_id']}/attachments"), 200, "received attachments")["data"]
    ids["download_token"] = parts[0]["download_url"].rstrip("/").rsplit("/", 1)[-1]
    ids["received_attachment_id"] = parts[0]["id"]
    # The message went to the Inbox channel at that address: a conversation.
    ids["channel_id"] = expect(raw.get("/inbox/channels"), 200, "inbox channels")["data"][0]["id"]
    ids["conversation_id"] = expect(raw.get("/inbox/conversations"), 200, "inbox conversations")["data"][0]["id"]
    ids["unsigned_token"] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    # An export of the suppressions, and its download link once a worker wrote it.
    ids["export_id"] = expect(raw.post("/exports", json={"kind": "suppressions"}), 201, "export")["id"]
    for _ in range(200):
        export = expect(raw.get(f"/exports/{ids['export_id']}"), 200, "export")
        if export["status"] == "completed":
            break
        time.sleep(0.05)
    ids["export_token"] = export["download_url"].rstrip("/").rsplit("/", 1)[-1]
    # A migration from a Resend contacts file, read by a worker into review.
    migration = raw.post("/migrations", data={"source": "resend"}, files={"file": ("contacts.csv", f"email,first_name\ngen-move-{run}@example.com,Mo\n", "text/csv")})
    ids["migration_id"] = expect(migration, 201, "migration")["id"]
    poll("the migration in review", lambda: expect(raw.get(f"/migrations/{ids['migration_id']}"), 200, "migration")["status"] == "review")
    client_answer = expect(raw.post("/oauth/register", json={"client_name": "Generated agent", "redirect_uris": ["http://127.0.0.1:9/cb"]}), 201, "register an OAuth client")
    ids["client_id"] = client_answer["client_id"]
    ids["registration_access_token"] = client_answer["registration_access_token"]
    ok("created one of each resource")
    return ids, receiver


# --- 3. every GET ----------------------------------------------------------------------------


TOKENS = {
    "view-preferences": "preferences_token", "view-shared-email": "share_token", "view-unsubscribe": "unsubscribe_token",
    "track-click": "unsigned_token", "track-open": "unsigned_token",
    "download-received-attachment": "download_token", "download-email-attachment": "sent_download_token",
    "download-received-raw": "raw_token",
    "download-export": "export_token",
    "view-verify-email": "unsigned_token", "view-password-reset": "unsigned_token", "view-invitation": "unsigned_token",
    "view-consent": "unsigned_token", "view-verified-identity-link": "unsigned_token",
}

# Path parameters named like another resource's on some operations.
RENAMED = {"get-received-email": {"email_id": "received_email_id"}, "list-received-email-attachments": {"email_id": "received_email_id"},
           "get-received-email-raw": {"email_id": "received_email_id"},
           "get-received-email-attachment": {"email_id": "received_email_id", "attachment_id": "received_attachment_id"}}

# Values of required query parameters.
REQUIRED_QUERY = {"search-inbox": {"q": "received"}}

# Operations answering a documented error rather than 200 here, with the reason.
EXPECTED_ERRORS = {
    "get-domain-claim": (404, "a claim needs another team holding the domain"),
    "track-click": (404, "tracking tokens are signed into delivered mail of a tracked domain; this one is not signed"),
    "track-open": (404, "tracking tokens are signed into delivered mail of a tracked domain; this one is not signed"),
    "view-verify-email": (404, "a mailed link's token is random and single-use; this one was never issued"),
    "view-password-reset": (404, "a mailed link's token is random and single-use; this one was never issued"),
    "view-invitation": (404, "an invitation's token is random and single-use; this one was never issued"),
    "view-verified-identity-link": (404, "a verified identity's link token is random and single-use; this one was never issued"),
    "view-consent": (404, "a consent page's token comes from /oauth/authorize; this one was never issued"),
    "authorize": (400, "authorize names a registered client and redirect URI, which a call without parameters does not"),
    "start-sso": (422, "single sign-on starts from an address whose domain a team's single sign-on covers; this call names none"),
    "finish-sso": (403, "the callback takes a provider's answer to a sign-in this browser started; this call brings none"),
    "get-inbox-draft": (403, "a draft is the session's own; this session signed up a team of its own, whose Inbox has no channel yet "
                        "(tests/tests/dashboard_inbox.rs reads one back)"),
}


def undeclared_fields(value, at="$"):
    """Where a parsed model holds fields its schema does not declare."""
    found = []
    extra = getattr(value, "additional_properties", None)
    if isinstance(extra, dict) and extra and not getattr(type(value), "_herald_free_form", False):
        found.append(f"{at}: {sorted(extra)}")
    if hasattr(value, "__attrs_attrs__"):
        for attribute in value.__attrs_attrs__:
            if attribute.name != "additional_properties":
                found += undeclared_fields(getattr(value, attribute.name), f"{at}.{attribute.name}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += undeclared_fields(item, f"{at}[{i}]")
    return found


def free_form_models(spec, models):
    """Models of schemas that are maps (`additionalProperties` declared): extra keys are their data."""
    for name, schema in spec["components"]["schemas"].items():
        if schema.get("additionalProperties") not in (None, False):
            model = getattr(models, name, None)
            if model is not None:
                model._herald_free_form = True
    for module in models.__dict__.values():
        if isinstance(module, type) and module.__name__.endswith(("Headers", "Tags", "Properties", "HeadersType0", "Config", "OutcomeType0", "OutputType0", "Totals", "DataItem", "HeaderValuesType0", "SchemaType0", "Payload")):
            module._herald_free_form = True


def session_client(gen, raw, base_url):
    """A generated client holding a dashboard session (an account signed up through the API),
    for the operations whose security is the `session` cookie."""
    answer = raw.post(
        "/auth/signup",
        json={"email": f"person-{uuid.uuid4().hex[:12]}@example.com", "password": "a generated client's password", "name": "Generated"},
    )
    expect(answer, 201, "sign up")
    return gen.Client(
        base_url=base_url, headers={"User-Agent": USER_AGENT}, cookies={"herald_session": answer.cookies["herald_session"]},
        raise_on_unexpected_status=True, timeout=httpx.Timeout(30.0),
    )


def call_every_get(spec, client, gen, ids, session=None):
    for path, item in spec["paths"].items():
        operation = item.get("get")
        if not operation:
            continue
        caller = session if operation.get("security") == [{"session": []}] else client
        if operation.get("security") == [{"registration": []}]:
            caller = attrs.evolve(client, token=ids["registration_access_token"])
        op_id = operation["operationId"]
        what = f"GET {path} ({op_id})"
        try:
            module = next(
                importlib.import_module(f"{PACKAGE}.api.{package.name}.{snake(op_id)}")
                for package in (Path(gen.__file__).parent / "api").iterdir()
                if (package / f"{snake(op_id)}.py").exists()
            )
        except StopIteration:
            fail(what, "no generated module")
            continue
        kwargs = {}
        missing = None
        for parameter in operation.get("parameters", []):
            if parameter["in"] != "path":
                continue
            key = TOKENS.get(op_id, parameter["name"]) if parameter["name"] == "token" else parameter["name"]
            key = RENAMED.get(op_id, {}).get(key, key)
            if key not in ids:
                missing = parameter["name"]
                break
            kwargs[snake(parameter["name"])] = ids[key]
        if missing:
            fail(what, f"no id for the path parameter `{missing}`: create the resource in create_resources()")
            continue
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "query" and parameter.get("required"):
                kwargs[snake(parameter["name"])] = REQUIRED_QUERY[op_id][parameter["name"]]
        try:
            response = module.sync_detailed(client=caller, **kwargs)
        except Exception as error:  # the generated parser raised on the answer
            fail(what, f"{type(error).__name__}: {error}\n{traceback.format_exc(limit=3)}")
            continue
        expected_status, reason = EXPECTED_ERRORS.get(op_id, (200, None))
        status = int(response.status_code)
        if status != expected_status:
            fail(what, f"status {status} (expected {expected_status}): {response.content[:400]!r}")
            continue
        parsed = response.parsed
        if expected_status != 200 and isinstance(parsed, str) and "<html" in parsed.lower():
            ok(f"{what}: {status} page ({reason})")
            continue
        if expected_status != 200:
            if not isinstance(parsed, gen.models.Error):
                fail(what, f"{status} did not parse as Error: {parsed!r}")
            else:
                ok(f"{what}: {status} {parsed.name} ({reason})")
            continue
        if isinstance(parsed, gen.models.Error) or parsed is None:
            fail(what, f"200 parsed as {type(parsed).__name__}: {response.content[:400]!r}")
            continue
        if isinstance(parsed, str):
            if "<html" not in parsed.lower():
                fail(what, f"expected an HTML page, got {parsed[:200]!r}")
            else:
                ok(f"{what}: HTML page")
            continue
        if hasattr(parsed, "payload"):
            if not response.content:
                fail(what, "an empty binary body")
            else:
                ok(f"{what}: binary body of {len(response.content)} bytes")
            continue
        extra = undeclared_fields(parsed)
        if extra:
            fail(what, "fields the document does not declare: " + "; ".join(extra))
            continue
        sent = json.loads(response.content)
        again = json.loads(json.dumps(parsed.to_dict(), default=str))
        if normalize(again) != normalize(sent):
            fail(what, f"the model does not serialize back to the answer:\n sent   {json.dumps(sent)[:600]}\n parsed {json.dumps(again)[:600]}")
            continue
        ok(f"{what}: {type(parsed).__name__}")


def normalize(value):
    """JSON with instants compared as instants (the client writes `+00:00`, so does Herald)."""
    if isinstance(value, dict):
        return {key: normalize(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [normalize(inner) for inner in value]
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:.]+(Z|[+-]\d\d:\d\d)", value):
        from datetime import datetime
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    return value


def main():
    base_url = env("HERALD_BASE_URL").rstrip("/")
    api_key = env("HERALD_API_KEY")
    from_domain = env("HERALD_FROM_DOMAIN")
    document = Path(env("HERALD_OPENAPI", str(ROOT / "openapi" / "openapi.json")))
    spec = json.loads(document.read_text())

    workdir = Path(tempfile.mkdtemp(prefix="herald-generated-"))
    receiver = None
    try:
        out = generate(document, workdir)
        if out is None:
            return 1
        check_coverage(spec, out)
        sys.path.insert(0, str(workdir))
        gen = importlib.import_module(PACKAGE)
        gen.models = importlib.import_module(f"{PACKAGE}.models")
        free_form_models(spec, gen.models)
        client = gen.AuthenticatedClient(
            base_url=base_url, token=api_key, headers={"User-Agent": USER_AGENT},
            raise_on_unexpected_status=True, timeout=httpx.Timeout(30.0),
        )
        raw = httpx.Client(
            base_url=base_url, timeout=30.0,
            headers={"Authorization": f"Bearer {api_key}", "User-Agent": USER_AGENT},
        )
        try:
            ids, receiver = create_resources(client, raw, gen, from_domain)
        except Exception as error:
            fail("create one of each resource", f"{error}\n{traceback.format_exc(limit=4)}")
            return 1
        try:
            session = session_client(gen, raw, base_url)
        except Exception as error:
            fail("sign up for a dashboard session", f"{error}\n{traceback.format_exc(limit=4)}")
            return 1
        call_every_get(spec, client, gen, ids, session)
    finally:
        if receiver is not None:
            receiver.shutdown()
        shutil.rmtree(workdir, ignore_errors=True)
    if FAILURES:
        print(f"{len(FAILURES)} failed: {', '.join(FAILURES)}", flush=True)
        return 1
    print("all ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
