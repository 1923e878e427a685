"""Verifies one webhook delivery with the `standardwebhooks` library from PyPI, reading only
the Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature).

stdin: JSON `{ "secret": "whsec_…", "headers": { name: value }, "body": "<raw body>" }`.
Exits 0 and prints `ok` when it verifies, else prints the library's reason and exits 1."""
import json
import sys

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

delivery = json.load(sys.stdin)
headers = {k: v for k, v in delivery["headers"].items() if k.lower().startswith("webhook-")}
try:
    Webhook(delivery["secret"]).verify(delivery["body"], headers)
except WebhookVerificationError as error:
    print(f"standardwebhooks: {error}")
    sys.exit(1)
print("ok")
