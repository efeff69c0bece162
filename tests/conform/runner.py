#!/usr/bin/env python3
"""A relay runner in Python, standard library only, for `relay-bench conform --runner`.

Usage: runner.py DIR HANDLER [--fault FAULT]

It sweeps stale relay files, then every 50 ms lists DIR and, for each new `<id>.req.json`,
reads it (no symbolic link followed, at most 16 MiB), deletes it and runs HANDLER in a thread
with the request on stdin, publishing what HANDLER prints as `<id>.res.json` (a temp name in
DIR, then a rename). A request it cannot read is answered {"ok":false} and left; one it cannot
parse is answered {"ok":false}. Names handled this turn are never run again.

Each --fault breaks one rule, for the tests of the battery:
  non-atomic     answers written in place, not renamed
  no-delete      requests are never deleted
  no-sweep       no stale sweep at start
  rerun-reused   a name is forgotten once handled, so a reused id runs again
  pause-as-ok    a pause is answered {"ok":true,"text":""}
  republish-answer  each answer is published again 0.6 s later
  rerun-tool     each tool is run a second time 0.6 s later
  empties-link   a request that is a symbolic link is followed and its target emptied
  takes-temps    `.req.json.tmp.` names a list still finds 300 ms after it first did are deleted
"""
import json
import os
import stat
import subprocess
import sys
import threading
import time

import relay_answer

CAP = 16 << 20


def relay_name(name):
    for suffix in (".req.json", ".res.json"):
        if name.endswith(suffix):
            return True
        if (suffix + ".tmp.") in name:
            return True
    return False


def main():
    directory, handler = sys.argv[1], sys.argv[2]
    fault = sys.argv[sys.argv.index("--fault") + 1] if "--fault" in sys.argv else None

    def publish(file_id, answer):
        final = os.path.join(directory, file_id + ".res.json")
        body = json.dumps(answer, separators=(",", ":"), ensure_ascii=False).encode()
        if fault == "non-atomic":
            with open(final, "wb") as f:
                f.write(body)
            return
        tmp = "%s.tmp.py%d-%d" % (final, os.getpid(), threading.get_ident())
        with open(tmp, "wb") as f:
            f.write(body)
        os.replace(tmp, final)

    def handle(file_id, body, name):
        bad = relay_answer.bad_request(body)
        if bad:
            publish(file_id, bad)
            return
        answer = relay_answer.run(handler, body)
        if answer.get("paused") is True and fault == "pause-as-ok":
            answer = {"ok": True, "text": ""}
        publish(file_id, answer)
        if fault == "republish-answer":
            time.sleep(0.6)
            publish(file_id, answer)
        if fault == "rerun-tool":
            time.sleep(0.6)
            subprocess.run([handler], input=body, capture_output=True)
        if fault == "rerun-reused":
            seen.discard(name)

    if fault != "no-sweep":
        for name in os.listdir(directory):
            if relay_name(name):
                try:
                    os.remove(os.path.join(directory, name))
                except OSError:
                    pass
    seen = set()
    temps = {}
    while True:
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            names = []
        for name in names:
            if fault == "takes-temps" and ".req.json.tmp." in name:
                first = temps.setdefault(name, time.time())
                if time.time() - first >= 0.3:
                    try:
                        os.remove(os.path.join(directory, name))
                    except OSError:
                        pass
            if not name.endswith(".req.json") or name in seen:
                continue
            seen.add(name)
            file_id = name[: -len(".req.json")]
            path = os.path.join(directory, name)
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except FileNotFoundError:
                seen.discard(name)
                continue
            except OSError as e:
                if fault == "empties-link" and os.path.islink(path):
                    open(path, "w").close()
                publish(file_id, {"ok": False, "error": "cannot read %s: %s" % (name, e)})
                continue
            with os.fdopen(fd, "rb") as f:
                st = os.fstat(f.fileno())
                if not stat.S_ISREG(st.st_mode) or st.st_size > CAP:
                    continue
                body = f.read(CAP + 1)
            if fault != "no-delete":
                os.remove(path)
            threading.Thread(target=handle, args=(file_id, body, name), daemon=True).start()
        time.sleep(0.05)


if __name__ == "__main__":
    main()
