"""What the Python runners of the conform tests answer a request with (shared by runner.py
and remote_runner.py, which import it from their own directory)."""

import json
import subprocess


def bad_request(body):
    """{"ok":false} when `body` is not a request (JSON with a string toolName), else None."""
    try:
        req = json.loads(body.decode("utf-8"))
        if not isinstance(req, dict) or not isinstance(req.get("toolName"), str):
            raise ValueError("no toolName")
    except ValueError as e:
        return {"ok": False, "error": "bad request: %s" % e}
    return None


def run(handler, body):
    """What HANDLER prints for the request `body` on its stdin; an error when it prints no
    JSON."""
    out = subprocess.run([handler], input=body, capture_output=True)
    try:
        return json.loads(out.stdout)
    except ValueError:
        return {"ok": False, "error": "handler printed no answer"}
