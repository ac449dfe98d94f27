// `act`, the one way both flows send a command: a refusal goes to the flow's handler and the
// caller gets null, never an exception to swallow. Run by `node --test Tests/kiosk-ui/`.

import assert from "node:assert/strict";
import { test } from "node:test";
import { CommandError, DaemonConnection } from "../../samples/kiosk-ui/js/connection.js";

test("a command sent while not connected is refused to the handler, and the caller gets null", async () => {
  const connection = new DaemonConnection("ws://127.0.0.1:1/");
  const refused = [];
  const answer = await connection.act("status", {}, (error) => refused.push(error));
  assert.equal(answer, null);
  assert.equal(refused.length, 1);
  assert.match(refused[0].message, /not connected/);
});

test("an answer is handed back and the handler is not called", async () => {
  const connection = new DaemonConnection("ws://127.0.0.1:1/");
  connection.request = async (command, args) => ({ command, args });
  const answer = await connection.act("topics", { a: 1 }, () => assert.fail("refused"));
  assert.deepEqual(answer, { command: "topics", args: { a: 1 } });
});

test("the daemon's refusal reaches the handler with its code", async () => {
  const connection = new DaemonConnection("ws://127.0.0.1:1/");
  connection.request = async (command) => {
    throw new CommandError(command, { code: "sign_in_required", message: "sign in first" });
  };
  let code = null;
  assert.equal(await connection.act("cue.list", {}, (error) => { code = error.code; }), null);
  assert.equal(code, "sign_in_required");
});
