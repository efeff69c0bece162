// Production's relay runner (Agenta-AI/agenta, services/runner/src/tools/relay.ts:
// startToolRelay over localRelayHost, its stale sweep, delete-on-pickup and local watch), as
// `relay-bench conform --runner` starts a runner: the relay dir from $RELAY_DIR, the tool from
// $RELAY_CONFORM_HANDLER. Bundled by scripts/conform-production.sh.
//
// The one tool, `conform`, is a client tool: production's relay hands it to the
// ClientToolRelay below, which runs the handler program with the request's JSON on stdin and
// maps its answer onto production's outcomes: a pause is "pendingApproval" (production writes
// no answer unless $CONFORM_WRITE_PAUSED=1, its other integration), an error is a throw (its
// message becomes the answer's `error`), an ok text is the output value it holds (the battery's
// texts are canonical JSON, which production's JSON.stringify of the output writes back
// unchanged).
import { execFile } from "node:child_process";

import { localRelayHost, startToolRelay } from "./agenta/services/runner/src/tools/relay.ts";

const dir = process.env.RELAY_DIR as string;
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
  localRelayHost(),
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
