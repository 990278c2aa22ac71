"""Whether anything listens at a host and port, asked before work that needs it (an LLM or
embedding endpoint, a Ray cluster): a refused connection or a host name that does not resolve is
tried once more after :data:`RETRY_S` (a server restarting), then named in one line, instead of a
client's minutes of retries against nobody."""

from __future__ import annotations

import socket
import time

RETRY_S = 0.5  # one short second try, not a client's backoff


def unreachable(host: str, port: int, timeout: float = 3.0) -> str | None:
    """Why nothing can be sent to ``host:port`` (its name does not resolve, nothing listens there),
    after one short second try; None when a connection opens or only times out (slow is not down)."""
    reason = None
    for attempt in range(2):
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return None
        except socket.gaierror as err:
            reason = f"the host name {host!r} does not resolve ({err})"
        except ConnectionRefusedError as err:
            reason = f"nothing listens at {host}:{port} ({err})"
        except OSError:
            return None
        if attempt == 0:
            time.sleep(RETRY_S)
    return reason
