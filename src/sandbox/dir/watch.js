"use strict";
// relay-bench's bounded watch window for Node (`node -e THIS DIR WINDOW_MS RELIST_MS`), run
// by the sandbox's daemon as production runs its own: the same facts as `relay-bench
// sandbox-watch` with its defaults. Arm fs.watch on DIR first, then look once; finish on any
// watch event or watch error, on a re-list that sees a *.req.json, or when the window is
// over. Prints nothing; finishing only releases the handles, so Node exits 0 by itself. A
// dir that cannot be watched leaves the re-list running. DIR comes from argv, never from
// this text.
const fs = require("fs");
const [dir, windowMs, relistMs] = process.argv.slice(1);
const release = [];
let over = false;
function finish() {
  if (over) return;
  over = true;
  for (const r of release) r();
}
try {
  const w = fs.watch(dir, finish);
  w.on("error", finish);
  release.push(() => w.close());
} catch (_) {
  // Unwatchable: the re-list carries the window.
}
function seesRequest() {
  try {
    return fs.readdirSync(dir).some((n) => n.endsWith(".req.json"));
  } catch (_) {
    return false;
  }
}
if (seesRequest()) finish();
if (!over) {
  const relist = setInterval(() => seesRequest() && finish(), Number(relistMs));
  const end = setTimeout(finish, Number(windowMs));
  release.push(() => clearInterval(relist), () => clearTimeout(end));
}
