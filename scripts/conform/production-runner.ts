// Production's relay runner (Agenta-AI/agenta, services/runner/src/tools/relay.ts:
// startToolRelay, its stale sweep, delete-on-pickup and wake sources), as
// `relay-bench conform --runner` starts a runner: the relay dir from $RELAY_DIR, the tool from
// $RELAY_CONFORM_HANDLER. Bundled by scripts/conform-production.sh.
//
// The host is localRelayHost, or, when the battery gives a daemon's URL ($RELAY_SANDBOX_URL,
// `conform --runner --host sandbox-agent`), sandboxRelayHost over that daemon: production's own
// host code (its `ls -1` list, reads, temp-then-move publication, deletes, and the remote
// window when $AGENTA_AGENT_TOOLS_RELAY_REMOTE_WATCH_ENABLED=true) over `daemonClient` below,
// our fetch client in the shape of the sandbox-agent SDK methods that host calls, each one
// HTTP request to the daemon (docs/real-daemon.md has the table).
//
// The one tool, `conform`, is a client tool: production's relay hands it to the
// ClientToolRelay below, which runs the handler program with the request's JSON on stdin and
// maps its answer onto production's outcomes: a pause is "pendingApproval" (production writes
// no answer unless $CONFORM_WRITE_PAUSED=1, its other integration), an error is a throw (its
// message becomes the answer's `error`), an ok text is the output value it holds (the battery's
// texts are canonical JSON, which production's JSON.stringify of the output writes back
// unchanged).
import { execFile } from "node:child_process";

import { localRelayHost, sandboxRelayHost, startToolRelay } from "./agenta/services/runner/src/tools/relay.ts";

const dir = process.env.RELAY_DIR as string;
const url = process.env.RELAY_SANDBOX_URL;

// One daemon request per SDK method sandboxRelayHost calls; a non-2xx answer throws its detail.
function daemonClient(base: string) {
  const at = (route: string, path: string) => `${base}${route}?path=${encodeURIComponent(path)}`;
  const send = async (method: string, to: string, body?: string | Uint8Array, type?: string) => {
    const res = await fetch(to, { method, body, headers: type ? { "content-type": type } : {} });
    const bytes = new Uint8Array(await res.arrayBuffer());
    if (!res.ok) {
      const text = new TextDecoder().decode(bytes);
      let detail = text;
      try {
        detail = JSON.parse(text).detail ?? text;
      } catch {}
      throw new Error(`sandbox-agent ${res.status}: ${detail}`);
    }
    return bytes;
  };
  const post = (to: string, body: unknown) => send("POST", to, JSON.stringify(body), "application/json");
  return {
    runProcess: (req: { command: string; args: string[]; timeoutMs?: number }) =>
      post(`${base}/v1/processes/run`, req).then((b) => JSON.parse(new TextDecoder().decode(b))),
    readFsFile: ({ path }: { path: string }) => send("GET", at("/v1/fs/file", path)),
    writeFsFile: ({ path }: { path: string }, contents: string) =>
      send("PUT", at("/v1/fs/file", path), contents, "application/octet-stream").then(() => undefined),
    moveFs: (req: { from: string; to: string; overwrite?: boolean }) =>
      post(`${base}/v1/fs/move`, req).then(() => undefined),
    deleteFsEntry: ({ path }: { path: string }) => send("DELETE", at("/v1/fs/entry", path)).then(() => undefined),
    statFs: ({ path }: { path: string }) =>
      send("GET", at("/v1/fs/stat", path)).then((b) => JSON.parse(new TextDecoder().decode(b))),
  };
}
const host = url
  ? sandboxRelayHost(daemonClient(url.replace(/\/$/, "")), { log: (m: string) => console.error(m) })
  : localRelayHost();
const handler = process.env.RELAY_CONFORM_HANDLER as string;
const spec = {
  name: "conform",
  kind: "client",
  description: "relay-bench conform's tool",
  inputSchema: { type: "object" },
} as any;

function runHandler(input: string): Promise<any> {
  return new Promise((resolve, reject) => {
    const child = execFile(handler, [], { maxBuffer: 64 << 20 }, (err, stdout) => {
      if (err) return reject(err);
      try {
        resolve(JSON.parse(stdout));
      } catch (e) {
        reject(e);
      }
    });
    child.stdin?.end(input);
  });
}

const relay = startToolRelay(
  host,
  dir,
  [spec],
  undefined,
  undefined,
  {
    onClientTool: async (req: any) => {
      const call = { toolName: req.toolName, toolCallId: req.toolCallId, args: req.input };
      const reply = await runHandler(JSON.stringify(call));
      if (reply.paused === true) return "pendingApproval";
      if (reply.ok === false) throw new Error(reply.error);
      return { output: JSON.parse(reply.text) };
    },
  } as any,
  undefined,
  { log: (m: string) => console.error(m), writePausedAnswer: process.env.CONFORM_WRITE_PAUSED === "1" },
);
relay.ready.then(() => console.error("[conform] relay ready"));
process.on("SIGTERM", () => relay.stop().then(() => process.exit(0)));
