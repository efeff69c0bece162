// One call through production's relay writer (Agenta-AI/agenta, services/runner/src/tools/
// relay-client.ts), as `relay-bench conform --writer` starts a writer: the call from the
// environment conform sets, the answer printed as a response's JSON on one line. Bundled
// with relay-client.ts and relay-protocol.ts by scripts/conform-production.sh.
//
// relayToolCall returns the text of an ok answer, RELAY_PAUSED for a pause, and throws for
// everything else: an error answer (its `error` as the message), a malformed answer (a JSON
// parse error), or the deadline ("tool relay timed out for ..."). The deadline is reported as
// no answer (exit 5); every other throw as {"ok":false,"error":message}.
import { RELAY_PAUSED, relayToolCall } from "./agenta/services/runner/src/tools/relay-client.ts";

const env = process.env;
const timeout = env.RELAY_CALL_TIMEOUT_MS ? Number(env.RELAY_CALL_TIMEOUT_MS) : undefined;

async function main(): Promise<number> {
  try {
    const r = await relayToolCall(
      env.RELAY_DIR as string,
      env.RELAY_CALL_TOOL as string,
      env.RELAY_CALL_ID as string,
      JSON.parse(env.RELAY_CALL_ARGS || "{}"),
      timeout,
    );
    if (r === RELAY_PAUSED) {
      console.log(JSON.stringify({ ok: true, paused: true }));
      return 4;
    }
    console.log(JSON.stringify({ ok: true, text: r }));
    return 0;
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    if (message.startsWith("tool relay timed out")) {
      console.error(message);
      return 5;
    }
    console.log(JSON.stringify({ ok: false, error: message }));
    return 1;
  }
}

main().then((code) => process.exit(code));
