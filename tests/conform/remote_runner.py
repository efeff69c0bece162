#!/usr/bin/env python3
"""A relay runner in Python that reaches its dir only through a sandbox-agent daemon, as
production's sandboxRelayHost does, for `relay-bench conform --runner --host sandbox-agent`.

Usage: remote_runner.py URL DIR HANDLER [--fault no-delete]

Standard library only. Every operation on DIR is one of the daemon's HTTP requests: a list is
`POST /v1/processes/run` of `ls -1 DIR`, a read `GET /v1/fs/file`, a delete
`DELETE /v1/fs/entry`, a publication `PUT /v1/fs/file` of a temp name then `POST /v1/fs/move`
onto the final name. It sweeps stale relay files, then every 100 ms lists DIR and, for each new
`<id>.req.json`, reads it (at most 16 MiB, by the daemon's stat first), deletes it and runs
HANDLER (on this side, as a runner's tool runs) in a thread with the request on stdin,
publishing what HANDLER prints as the answer. The daemon's stat and read follow a symbolic
link, so a request name that is one is told by `test -L` run through the daemon, and answered
{"ok":false} and left, as one it cannot read is; one it cannot parse is answered
{"ok":false}. Names handled this turn are never run again. --fault no-delete never deletes a
request (for the tests of the battery).
"""
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import relay_answer

CAP = 16 << 20


def main():
    base, directory, handler = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3]
    fault = sys.argv[sys.argv.index("--fault") + 1] if "--fault" in sys.argv else None

    def call(method, route, path=None, body=None, ctype=None):
        url = base + route + ("?path=" + urllib.parse.quote(path, safe="/") if path else "")
        req = urllib.request.Request(url, data=body, method=method)
        if ctype:
            req.add_header("content-type", ctype)
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.read()

    def run(argv):
        body = json.dumps({"command": argv[0], "args": argv[1:], "timeoutMs": 10000}).encode()
        return json.loads(call("POST", "/v1/processes/run", body=body, ctype="application/json"))

    def remove(path):
        try:
            call("DELETE", "/v1/fs/entry", path)
        except urllib.error.HTTPError:
            pass

    counter = [0]
    lock = threading.Lock()

    def publish(file_id, answer):
        final = directory + "/" + file_id + ".res.json"
        with lock:
            counter[0] += 1
            tmp = "%s.tmp.pyr%d-%d" % (final, os.getpid(), counter[0])
        body = json.dumps(answer, separators=(",", ":"), ensure_ascii=False).encode()
        call("PUT", "/v1/fs/file", tmp, body, "application/octet-stream")
        move = json.dumps({"from": tmp, "to": final, "overwrite": True}).encode()
        call("POST", "/v1/fs/move", body=move, ctype="application/json")

    def handle(file_id, body):
        publish(file_id, relay_answer.bad_request(body) or relay_answer.run(handler, body))

    def names():
        return run(["ls", "-1", directory]).get("stdout", "").splitlines()

    for name in names():
        if name.endswith((".req.json", ".res.json")) or ".req.json.tmp." in name or ".res.json.tmp." in name:
            remove(directory + "/" + name)
    seen = set()
    while True:
        try:
            listed = sorted(names())
        except (OSError, ValueError):
            listed = []
        for name in listed:
            if not name.endswith(".req.json") or name in seen:
                continue
            seen.add(name)
            file_id = name[: -len(".req.json")]
            path = directory + "/" + name
            try:
                if run(["test", "-L", path]).get("exitCode") == 0:
                    publish(file_id, {"ok": False, "error": "%s is a symbolic link" % name})
                    continue
                stat = json.loads(call("GET", "/v1/fs/stat", path))
                if stat.get("size", 0) > CAP:
                    continue
                body = call("GET", "/v1/fs/file", path)
            except urllib.error.HTTPError as e:
                detail = e.read().decode("utf-8", "replace")
                if "path not found" in detail:
                    seen.discard(name)
                    continue
                publish(file_id, {"ok": False, "error": "cannot read %s: %s" % (name, detail)})
                continue
            if fault != "no-delete":
                remove(path)
            threading.Thread(target=handle, args=(file_id, body), daemon=True).start()
        time.sleep(0.1)


if __name__ == "__main__":
    main()
