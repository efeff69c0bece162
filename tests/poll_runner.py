#!/usr/bin/env python3
"""An independent relay runner, standard library only: the black-box peer of the tests.

Usage: poll_runner.py DIR INTERVAL_S [--double-every N] [--skip-every M] [--startup S]

Every INTERVAL_S it lists DIR, and for each `<id>.req.json` (temp names ignored) reads it,
deletes it and publishes `<id>.res.json` atomically (temp name in the same dir, then
rename). For the breach tests, every N-th request is answered twice and every M-th never.
With --startup S it first sleeps S seconds, then sweeps every relay file it finds (as
production's runner does before a turn), then serves.
"""
import json
import os
import sys
import time


def publish(directory, file_id, answer):
    final = os.path.join(directory, file_id + ".res.json")
    tmp = final + ".tmp.py%d" % os.getpid()
    with open(tmp, "w") as f:
        f.write(json.dumps(answer, separators=(",", ":")))
    os.replace(tmp, final)


def main():
    directory, interval = sys.argv[1], float(sys.argv[2])
    rest = sys.argv[3:]
    double_every = int(rest[rest.index("--double-every") + 1]) if "--double-every" in rest else 0
    skip_every = int(rest[rest.index("--skip-every") + 1]) if "--skip-every" in rest else 0
    startup = float(rest[rest.index("--startup") + 1]) if "--startup" in rest else 0
    if startup:
        time.sleep(startup)
        for name in os.listdir(directory):
            if name.endswith((".req.json", ".res.json")) or ".req.json.tmp." in name or ".res.json.tmp." in name:
                os.remove(os.path.join(directory, name))
    k = 0
    while True:
        for name in sorted(os.listdir(directory)):
            if not name.endswith(".req.json") or ".tmp." in name:
                continue
            path = os.path.join(directory, name)
            try:
                with open(path, "rb") as f:
                    body = f.read()
                os.remove(path)
            except FileNotFoundError:
                continue
            k += 1
            file_id = name[: -len(".req.json")]
            try:
                req = json.loads(body)
                answer = {"ok": True, "text": "echo " + req["toolName"]}
            except (ValueError, KeyError) as e:
                answer = {"ok": False, "error": "bad request: %s" % e}
            if skip_every and k % skip_every == 0:
                continue
            publish(directory, file_id, answer)
            if double_every and k % double_every == 0:
                publish(directory, file_id, answer)
        time.sleep(interval)


if __name__ == "__main__":
    main()
