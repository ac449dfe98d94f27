"""websockify's auth plugin for the practiced kiosk UI's bridge (practiced-kiosk-ui(1)).

The page offers its per-start token as a WebSocket subprotocol, `practiced.token.<hex>`,
beside `binary`; a WebSocket without this start's token gets 403 before anything reaches
the daemon's socket. The token travels in a header, never in a URL, so no log line holds
it (websockify logs each WebSocket's path). It is read from the launch page, the one file
that holds it (mode 0600, made by the launcher at each start), whose path is --auth-source.
"""

import hmac
import re

from websockify.auth_plugins import AuthenticationError

PREFIX = "practiced.token."
TOKEN = re.compile(r"#token=([0-9a-f]{64})\b")


class SubprotocolToken:
    def __init__(self, src=None):
        if not src:
            raise ValueError("SubprotocolToken needs --auth-source: the launch page that holds the token")
        with open(src, encoding="utf-8") as page:
            found = TOKEN.search(page.read())
        if not found:
            raise ValueError("no token in the launch page %s" % src)
        self.token = found.group(1).encode("ascii")

    def authenticate(self, headers, target_host, target_port):
        offered = []
        for header in headers.get_all("Sec-WebSocket-Protocol") or []:
            offered += [value.strip() for value in header.split(",")]
        tokens = [value[len(PREFIX):] for value in offered if value.startswith(PREFIX)]
        # One comparison per offered token, each in constant time; nothing of what was
        # offered is logged.
        if len(tokens) != 1 or not hmac.compare_digest(tokens[0].encode("ascii", "replace"), self.token):
            raise AuthenticationError(log_msg="a WebSocket without this start's token (refused before the daemon's socket)",
                                      response_code=403, response_msg="Forbidden")
