"""Schemathesis hooks for `tests/clients/schemathesis.sh`: the documented exclusions.

Every exclusion is a failure schemathesis reports where the server keeps a rule the OpenAPI
document cannot state (a rule across fields or parameters, or one that depends on what the team
already holds). Each is matched narrowly, by check, operation and the error the server answered,
and carries its reason; `docs/decisions.md` lists the same rules. Anything not matched here
fails the run.
"""

import os
import re
import uuid

import httpx
import schemathesis

# (failure code, operation regex or None for any, error `name` or None for any, message regex,
#  reason)
#   ST202: a request valid by the document was refused (positive_data_acceptance)
#   ST201: a request invalid by the document was accepted (negative_data_rejection)
#   ST101: a 5xx answer (not_a_server_error)
EXCLUSIONS = [
    (
        "ST202", r"^POST /auth/signup$", "validation_error",
        r"an account with this address exists|must be 10 to 200 characters|must be 1 to 100 characters|`email`",
        "an account's address is an RFC 5322 mailbox that has no account yet, its password 10 to 200 "
        "characters and its name one line: rules of the address syntax and of what already exists",
    ),
    (
        "ST202", r"^POST /team/identities$", "validation_error", r"`email`",
        "a verified identity is an RFC 5322 mailbox: a rule of the address syntax",
    ),
    (
        "ST202", r"^GET /auth/sso/start$", None, r"`email`|single sign-on covers",
        "single sign-on starts from an RFC 5322 mailbox whose domain a team's single sign-on "
        "covers: a rule of the address syntax and of what the teams hold",
    ),
    (
        "ST202", r"^POST /auth/password-reset$", "validation_error", r"`email`",
        "a reset is asked for an RFC 5322 mailbox: a rule of the address syntax",
    ),
    (
        "ST202", r"^POST /auth/login$", None, r"address or the password is wrong|Too many failed sign-ins",
        "signing in needs an account's own address and password; failures are throttled",
    ),
    (
        "ST202",
        r"^(GET /auth/session|POST /auth/(logout|verify-email/resend|invitations/accept|mfa/totp(/confirm|/disable)?)"
        r"|(GET|POST) /teams|POST /teams/\{team_id\}/switch|(PATCH|DELETE) /team/members/\{user_id\}"
        r"|(GET|POST) /team/invitations|DELETE /team/invitations/\{invitation_id\}|(PUT|DELETE) /team/sso)$",
        "invalid_permission", r"session cookie",
        "the dashboard session's routes take its cookie and refuse the API key this run sends",
    ),
    (
        "ST202", r"^(POST /oauth/register|PUT /oauth/register/\{client_id\})$", None, r"",
        "a registration's redirect URIs are https or loopback http URLs without a fragment, its links "
        "https URLs, its scopes the catalogue's, its name one line, and its body free of control "
        "characters (each `400 invalid_client_metadata` or `invalid_redirect_uri`, RFC 7591); an "
        "address registers at most 10 clients an hour; a registration is managed with its own "
        "token: URL rules, a rate limit and a credential the document cannot state as a schema",
    ),
    (
        "ST202", r"^(GET|PUT|DELETE) /oauth/register/\{client_id\}$", "invalid_token", r"registration access token",
        "a registration is managed with its own registration access token (RFC 7592), which this run "
        "does not hold",
    ),
    (
        "ST202", r"^POST /oauth/(token|revoke)$", None, r"",
        "the token and revoke endpoints take an OAuth form naming a live client and its code, "
        "verifier or token (RFC 6749, RFC 7009): what they accept depends on what was issued",
    ),
    (
        "ST202", r"^GET /oauth/authorize$", None, r"^\n?$",
        "authorize answers its 400 page to a client id and redirect URI that are not registered; "
        "the run's random ones never are",
    ),
    (
        "ST202", r"^GET ", "invalid_parameter", r"`after` and `before` cannot be used together",
        "paging takes `after` or `before`, not both: OpenAPI cannot make two parameters exclusive",
    ),
    (
        "ST202", r"^GET ", "invalid_parameter", r"is not an item of this list",
        "a list held whole in its own order (not by id) pages from an item of that list: a cursor "
        "naming anything else is refused, which depends on what the team holds",
    ),
    (
        "ST202", r"^GET ", "invalid_parameter", r"must not be (before|after) `(start|end)_date`",
        "a date range must not end before it starts: OpenAPI cannot compare two parameters",
    ),
    (
        "ST202", None, "validation_error",
        r"must not contain control characters|must not contain a NUL character|must be one line",
        "control characters in a JSON body are refused by one rule for every string and key, stated "
        "once in the document's description rather than as a pattern on every field and on the "
        "names of fields the document does not list",
    ),
    (
        "ST202", r"^POST /contacts/imports$", "validation_error", r"^parse: failed to read headers",
        "a multipart part whose name holds control characters cannot be read (the same rule, in "
        "part headers the document does not list)",
    ),
    (
        "ST202", r"^(POST|PATCH) /(contact-properties|topics|segments|audiences)", None,
        r"is already declared|already has this name|already (has|uses) (this|that) name",
        "names are unique among the team's live properties, topics and segments: whether a name "
        "is free depends on what the team already holds",
    ),
    (
        "ST202", r"^(POST|PATCH) /(contacts|audiences/\{audience_id\}/contacts)", "invalid_parameter",
        r"is not a (segment|topic) id|is not one of the team's (segments|topics)",
        "segment and topic ids in a contact body must name the team's own live segments and "
        "topics; `segments` items are free-form `{ id }` objects shared with the import form",
    ),
    (
        "ST202", r"^(POST|PATCH) /(contact-properties|contacts|audiences/\{audience_id\}/contacts)", None,
        r"must be a (string|number|boolean)|must be a string, number or boolean|is not a valid key",
        "a property value (and a property's fallback) is a string, number or boolean of the type "
        "the property was declared with, under a key of a letter or `_` then letters, digits or "
        "`_`: rules across a body and the team's declared properties, on the keys of a free-form map",
    ),
    (
        "ST202", r"^POST /(segments|audiences|segments/count)$", "validation_error", r"^The filter has \d+ problems?\.",
        "a segment filter's grammar (groups, conditions, operators per property type, depth and "
        "size limits, the team's declared properties and topics) is checked by the handler and "
        "described in prose",
    ),
    (
        "ST202", r"^POST /contacts/imports$", None, r"CSV|column|[Tt]he file|`file`|`column_map`|`segments`|`topics`",
        "an import's file must be a CSV whose header names an email column, and its JSON fields "
        "(`column_map`, `segments`, `topics`) are checked by the handler",
    ),
    (
        "ST202", r"^POST /migrations$", None, r"^parse: failed to read headers|[Tt]he file|`file`|`credentials|`source`|HERALD_SECRET_KEY|archive",
        "a migration's file must be the named platform's export, and which credentials it takes "
        "depends on `source` (a cross-field rule), both checked by the handler",
    ),
    (
        "ST202", r"^POST /domains(/claim)?$", "validation_error", r"`name`",
        "a domain name is read by IDNA (UTS 46) rules with at least two labels, which no pattern "
        "states exactly",
    ),
    (
        "ST202", r"^POST /suppressions/batch/remove$", "validation_error", r"must hold 1 to 100 entries in all|`emails\[\d+\]`|Invalid `emails",
        "`emails` and `ids` hold 1 to 100 entries together (a rule across two fields), and an "
        "address is an RFC 5322 mailbox, which no pattern states exactly",
    ),
    (
        "ST202", r"^POST /api-keys$", "validation_error", r"only a `sending_access` key can be pinned",
        "`domain_id` goes with `permission: sending_access` only: a rule across two fields",
    ),
    (
        "ST202", r"^POST /emails(/batch)?$", None,
        r"email address|`html`|`text`|`subject`|`scheduled_at`|`headers|`tags|`attachments|`to`|`reply_to`|"
        r"`cc`|`bcc`|`from`|recipients|a batch holds|\[\d+\]|`template",
        "a send's content rules (RFC 5322 mailboxes in `from`/`to`/`cc`/`bcc`/`reply_to`, `html` "
        "or `text`, one-line subjects of at most 998 bytes, `scheduled_at` phrases 1 minute to 30 "
        "days ahead, reserved headers, unique tag names, attachment sources and sizes) are checked "
        "by the handler and described in prose",
    ),
    (
        "ST201", r"^POST /emails/batch$", None, r"`\[\d+\]\.",
        "with `x-batch-validation: permissive` a batch answers 200 and lists each refused item in "
        "`errors` with its index (document B): an invalid item is reported there, not refused",
    ),
    (
        "ST202", r"^POST /emails/\{email_id\}/share$", "validation_error", r"`expires_in`",
        "`expires_in` is a duration phrase (`10m`, `2 hours`, `1 day`) of at most 48 hours",
    ),
    (
        "ST202", r"^(POST|PATCH) /webhooks", "validation_error", r"endpoint|URL",
        "a webhook endpoint must be an http(s) URL that resolves to public addresses, checked "
        "against DNS when it is saved",
    ),
    (
        "ST202", r"^POST /domains/\{domain_id\}/autoconfigure$", None, r".",
        "whether auto-configuration can run depends on more than the request: the operator's "
        "`HERALD_SECRET_KEY` (needed by `keep_token`), a token kept by an earlier call (needed "
        "when `api_token` is left out) and the DNS provider's verdict on the token; no request "
        "is valid by its shape alone",
    ),
    (
        "ST202", r"^(PATCH /team|POST /templates|PATCH /templates/\{template_id\})$", "validation_error", r"logo_url",
        "a logo URL is https, or the address of an image uploaded to this Herald, whose public URL "
        "may be http: the pattern admits both schemes and the handler tells them apart",
    ),
    (
        "ST202", r"^POST /team/brand-kit/uploads$", None, r"^parse: failed to read headers|PNG, JPEG, GIF or WebP|`file`",
        "an upload must be a PNG, JPEG, GIF or WebP image of at most 2 MB, known by its first bytes "
        "(and a part whose name holds control characters cannot be read)",
    ),
    (
        "ST202", r"^(POST|PATCH) /(templates|saved-blocks)", None,
        r"`html`|`starter`|`document`|`text`|`variables|`content`|`alias`|`from`|`subject`|`reply_to|"
        r"brand_overrides|document|content|placeholder|declared|alias|template|version|`If-Match`",
        "a template's content is checked by the renderer: exactly one of `html`, `starter` and "
        "`document`, every `{{key}}` declared and every variable used, fallbacks of the declared "
        "type, merge-tag formats, a block document's grammar (block types, columns, the preheader, "
        "show-when rules over the team's properties, topics and segments, repeat groups), brand "
        "fields, mailbox syntax in `from`/`reply_to`, and an alias free among the team's live "
        "templates; a saved block's content is a block or section of that grammar; a template's "
        "`If-Match` is its `updated_at` as an RFC 3339 instant (generated values that fit the "
        "header's pattern as Python reads it, for instance before a line end, fail it as Rust's "
        "regex reads it)",
    ),
    (
        "ST202", r"^(POST|PATCH) /broadcasts", None,
        r"`from`|`subject`|`reply_to|`html`|`text`|`template|`segment_id`|`topic_id`|`scheduled_at`|"
        r"cannot be sent|Content checks fail|Only a draft|cannot be canceled|merge|format|currency|date|number",
        "a broadcast's fields refer to the team's own segments, topics and templates, its merge "
        "variables' formats are read by the renderer, `scheduled_at` goes with `send: true`, only a "
        "draft changes, and a send passes the compliance gate (a verified domain, a postal address, a "
        "live segment, a body) and the content checks: all of it depends on the team's state",
    ),
    (
        "ST202", r"^(POST|PATCH) /automations", None,
        r"graph has problems|`name`|`status`|`steps`|`connections`",
        "an automation's graph is checked whole by the handler: one trigger, every step reachable, "
        "no cycles, the edge rules, each step type's settings, and references to the team's own "
        "templates, segments, topics, properties and custom events; a name holds a non-space "
        "character; `steps` and `connections` go together on an update",
    ),
    (
        "ST202", r"^(POST|PATCH) /events", None,
        r"`name`|`schema|`contact_id`|`payload|The payload|The schema",
        "an event name follows document A's rules (lower-case letters, digits, `.`, `_`, `-`, a "
        "letter first, not UUID-shaped, `svc:` reserved, free among the team's live definitions); "
        "a send names exactly one of `contact_id` and `email`, and its payload must match the "
        "definition's schema and fit in 16 KB of JSON",
    ),
    (
        "ST202", r"^(POST /inbox/conversations|PATCH /inbox/conversations/\{conversation_id\}|POST /inbox/conversations/\{conversation_id\}/(notes|replies))$",
        None, r"`text`|`html`|`cc\[|`from\.email`|`subject`|`external_id`|`snoozed_until`|`assignee_id`|`folder_id`|`label_ids`|`status`|`place`|snooze|in (spam|trash)|changed since version|newer customer message|sandbox|quota|suppress",
        "a customer's message needs `text` or `html` (a rule across two fields) from an RFC 5322 "
        "address with a one-line subject; a reply is a send (sandbox, quota) answering the latest customer "
        "message; an update names a teammate, folder and labels of the "
        "conversation's channel, a key cannot snooze, a conversation in spam or trash takes only a "
        "move out, and `If-Match` must name the current version: rules of what the team holds, of "
        "the credential and of the conversation's state",
    ),
    (
        "ST202", r"^\S+ /inbox/", "invalid_permission", r"Inbox access does not reach",
        "the run's key may lower its own Inbox access with `PATCH /api-keys/{id}` (lowering needs no "
        "admin), after which the Inbox refuses it: a rule of the credential as the run left it",
    ),
    (
        "ST202", r"^POST /billing/checkout$", None, r"exactly one of|`quantity`|`return_url`|Missing `plan_code`",
        "a checkout names exactly one of `plan_code` and `addon_code`, and `quantity` goes with "
        "`inbox_seat` only: rules across two fields; a return URL must also parse as a URL",
    ),
    (
        "ST202", r"^POST /billing/addons$", "validation_error", r"`quantity`",
        "`quantity` goes with `inbox_seat` only (the storage add-on is one per team): a rule of "
        "the add-on named in the other field",
    ),
    (
        "ST202", r"^POST /billing/portal$", "validation_error", r"`return_url`",
        "a return URL must parse as a URL besides matching its pattern",
    ),
    (
        "ST101", r"^(POST|PATCH|DELETE) /billing", "service_unavailable", r"no payment provider|webhook is not configured",
        "billing writes answer 503 service_unavailable while the operator has configured no payment "
        "provider (`HERALD_STRIPE_SECRET_KEY`, `HERALD_STRIPE_WEBHOOK_SECRET`), as the spec says",
    ),
    (
        "ST202", r"^POST /billing/stripe/webhook$", "validation_error", r"Stripe signature",
        "Stripe's events are taken only with a valid `Stripe-Signature` over the body, which only "
        "Stripe (holding the signing secret) can make",
    ),
    (
        "ST202", r"^POST /ai/subject-lines$", "validation_error", r"Give the message",
        "subject lines need something to work from: one of `subject`, `html`, `text` (not blank) or "
        "`template_id`, a rule across four fields",
    ),
    (
        "ST202", r"^POST /ai/alt-text$", "validation_error", r"`image_url`",
        "an image URL must parse as an absolute https URL besides matching its pattern",
    ),
    (
        "ST202", r"^POST /ai/rewrite$", None, r"`block|exactly one of|Missing `preset`|`instruction`",
        "a rewrite takes a heading, text or button block with its words (fields of the free-form "
        "block) and exactly one of `preset` and `instruction`: rules across fields",
    ),
    (
        "ST101", r"^POST /ai/", "service_unavailable", r"AI assist is not configured",
        "every AI route answers 503 service_unavailable while the operator has configured no AI "
        "provider (`HERALD_AI_BASE_URL`), as the spec says; the run configures none",
    ),
    (
        "ST101", r"^PATCH /team$", "service_unavailable", r"AI assist is not configured",
        "the spec answers `ai_assist_enabled: true` with 503 service_unavailable until AI assist "
        "is configured; `false` always works",
    ),
]


def _own_key_id():
    """The id of the key the run uses, found by its token's prefix."""
    token = os.environ["HERALD_API_KEY"]
    client = httpx.Client(
        base_url=os.environ["HERALD_BASE_URL"].rstrip("/"),
        headers={"Authorization": f"Bearer {token}", "User-Agent": "herald-schemathesis/4.32"},
        timeout=30,
    )
    after = None
    while True:
        page = client.get("/api-keys", params={"limit": 100, **({"after": after} if after else {})}).json()
        for key in page["data"]:
            if token.startswith(key["key_prefix"]):
                return key["id"]
        if not page["has_more"]:
            raise SystemExit("the run's own API key is not in GET /api-keys")
        after = page["data"][-1]["id"]


OWN_KEY_ID = _own_key_id()


@schemathesis.hook
def before_call(context, case, kwargs):
    """The run never revokes the key it runs with (`DELETE /api-keys/{id}` finds it through
    `GET /api-keys`): that one id is swapped for an unknown one, which is `404 not_found`."""
    if case.method.upper() == "DELETE" and case.path == "/api-keys/{api_key_id}":
        if (case.path_parameters or {}).get("api_key_id") == OWN_KEY_ID:
            case.path_parameters["api_key_id"] = str(uuid.uuid4())


def _error(response):
    try:
        body = response.json()
    except Exception:
        return None, ""
    if not isinstance(body, dict):
        return None, ""
    messages = [str(body.get("message", "")), str(body.get("error_description", ""))]
    messages += [str(e.get("message", "")) for e in body.get("errors") or [] if isinstance(e, dict)]
    # The OAuth routes answer `{ error, error_description }`.
    return body.get("name") or body.get("error"), "\n".join(messages)


@schemathesis.hook
def filter_failure(context, failure, case, response):
    """Keeps every failure but the documented exclusions."""
    operation = f"{case.method.upper()} {case.path}"
    name, message = _error(response)
    for code, operations, error_name, pattern, _reason in EXCLUSIONS:
        if failure.code != code or (error_name is not None and name != error_name):
            continue
        if operations is not None and not re.search(operations, operation):
            continue
        if re.search(pattern, message):
            return False
    return True
