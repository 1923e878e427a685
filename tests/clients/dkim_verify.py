"""Verifies the DKIM signature of the message on stdin with dkimpy, the key given as argv[1]
(the DNS `p=` value). Exits 0 when it verifies, else prints dkimpy's reason and exits 1."""
import logging
import sys

import dkim

key = sys.argv[1]
message = sys.stdin.buffer.read()


def dns(name, timeout=5):
    return f"v=DKIM1; k=rsa; p={key}".encode()


class Reasons(logging.Handler):
    def __init__(self):
        super().__init__()
        self.seen = []

    def emit(self, record):
        self.seen.append(record.getMessage())


reasons = Reasons()
logger = logging.getLogger("dkim-check")
logger.addHandler(reasons)
logger.setLevel(logging.DEBUG)
d = dkim.DKIM(message, logger=logger)
try:
    ok = d.verify(dnsfunc=dns)
except dkim.DKIMException as error:
    ok = False
    reasons.seen.append(str(error))
if not ok:
    print("dkimpy: " + "; ".join(reasons.seen or ["signature did not verify"]))
    sys.exit(1)
print("dkimpy: ok")
