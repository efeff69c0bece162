#!/usr/bin/env python3
"""A relay writer in Python, standard library only, for `relay-bench conform --writer`.

One call per run, from the environment conform sets: RELAY_DIR, RELAY_CALL_TOOL,
RELAY_CALL_ID, RELAY_CALL_ARGS, RELAY_CALL_TIMEOUT_MS (args {} and a 60 s deadline when they
are unset). It refuses a call whose request name is taken (exit 2: an id that sanitizes like
one in flight), removes a stale answer under the call's id, publishes the request (a temp name in the dir, then a rename), checks for the
answer every 20 ms until the tool's timeout + 10 s, reads it (`paused` before `ok`), deletes
both files, prints the answer and exits 0 (ok), 1 (error), 4 (pause), 3 (malformed answer)
or 5 (no answer; the request removed).

Each --fault breaks one rule, for the tests of the battery:
  non-atomic       the request written in place, not renamed
  ignores-paused   `ok` checked before `paused`
  keeps-on-pause   the files are left after a pause
  returns-stale    a stale answer is not removed first
  early-deadline   gives up at the tool's timeout, without the 10 s
  reads-any        reads the first `*.res.json` in the dir, whoever's it is
  republish        publishes its request again when it vanished and no answer came in 1 s
  astral-one-unit  sanitizes an astral character to one `_` (code points, not UTF-16 units)
  collide          no check that the request name is free
  no-timeout-10s   without a timeout, gives up after 10 s (not 60 s)

--slow-start S sleeps S seconds before anything else: a writer a loaded machine is slow to
start, whose deadline must still be judged from its own clock.
"""
import json
import os
import sys
import time


def sanitize(call_id):
    out = []
    for c in call_id:
        if c.isascii() and (c.isalnum() or c in "_-"):
            out.append(c)
        else:
            out.append("_" * (2 if ord(c) > 0xFFFF and FAULT != "astral-one-unit" else 1))
    s = "".join(out)[:120]
    return s or "tool"


FAULT = sys.argv[sys.argv.index("--fault") + 1] if "--fault" in sys.argv else None
SLOW_START = float(sys.argv[sys.argv.index("--slow-start") + 1]) if "--slow-start" in sys.argv else 0


def publish(req, body):
    tmp = "%s.tmp.py%d" % (req, os.getpid())
    with open(tmp, "w") as f:
        f.write(body)
    os.replace(tmp, req)


def main():
    time.sleep(SLOW_START)
    fault = FAULT
    d = os.environ["RELAY_DIR"]
    call_id = os.environ["RELAY_CALL_ID"]
    timeout = os.environ.get("RELAY_CALL_TIMEOUT_MS", "")
    file_id = sanitize(call_id)
    req = os.path.join(d, file_id + ".req.json")
    res = os.path.join(d, file_id + ".res.json")
    body = '{"toolName":%s,"toolCallId":%s,"args":%s}' % (
        json.dumps(os.environ["RELAY_CALL_TOOL"], ensure_ascii=False),
        json.dumps(call_id, ensure_ascii=False),
        os.environ.get("RELAY_CALL_ARGS") or "{}",
    )
    if fault != "collide" and os.path.lexists(req):
        print("a call with file id %r is in flight" % file_id, file=sys.stderr)
        return 2
    if fault != "returns-stale" and os.path.lexists(res):
        os.remove(res)
    if fault == "non-atomic":
        with open(req, "w") as f:
            f.write(body)
    else:
        publish(req, body)
    grace = 0 if fault == "early-deadline" else 10
    deadline = time.time() + (int(timeout) / 1000 + grace if timeout else 10 if fault == "no-timeout-10s" else 60)
    vanished = None
    republished = False
    while time.time() < deadline:
        read = res
        if fault == "reads-any":
            found = sorted(n for n in os.listdir(d) if n.endswith(".res.json"))
            read = os.path.join(d, found[0]) if found else res
        try:
            with open(read, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            if fault == "republish" and not republished and not os.path.lexists(req):
                vanished = vanished or time.time()
                if time.time() - vanished > 1.0:
                    publish(req, body)
                    republished = True
            time.sleep(0.02)
            continue
        try:
            answer = json.loads(raw)
            if not isinstance(answer, dict):
                raise ValueError("not an object")
        except ValueError:
            answer = None
        paused = isinstance(answer, dict) and answer.get("paused") is True
        if not (paused and fault == "keeps-on-pause"):
            for p in (req, read):
                try:
                    os.remove(p)
                except FileNotFoundError:
                    pass
        if answer is None:
            print("malformed answer: %r" % raw[:80], file=sys.stderr)
            return 3
        if fault == "ignores-paused" and answer.get("ok") is True:
            print(json.dumps({"ok": True, "text": answer.get("text", "")}, ensure_ascii=False))
            return 0
        if paused:
            print('{"ok":true,"paused":true}')
            return 4
        if answer.get("ok") is True:
            print(json.dumps({"ok": True, "text": answer.get("text", "")}, ensure_ascii=False))
            return 0
        if answer.get("ok") is False:
            print(json.dumps({"ok": False, "error": answer.get("error", "")}, ensure_ascii=False))
            return 1
        print("answer without a boolean ok", file=sys.stderr)
        return 3
    try:
        os.remove(req)
    except FileNotFoundError:
        pass
    print("no answer before the deadline", file=sys.stderr)
    return 5


if __name__ == "__main__":
    sys.exit(main())
