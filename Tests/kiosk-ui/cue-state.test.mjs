// The cue page's state without a browser: `reduce` fed the events of an answer held aloud on
// practice-sim's Chatterbox mode (recorded from the release daemon through the bridge by the
// browser suite), and cases built by hand: the notices, the learner, the effects the page
// acts on. Every state is frozen before it is reduced: a reducer that writes into its input
// throws here. Run by `node --test Tests/kiosk-ui/`.

import assert from "node:assert/strict";
import { test } from "node:test";
import { deepFreeze, recordedEvents } from "./recorded.mjs";
import { initialCueState, reduce, withNotice, withoutNotice } from "../../samples/kiosk-ui/js/cues/cue-state.js";
import { newAnswer } from "../../samples/kiosk-ui/js/cues/answer-state.js";

const recorded = recordedEvents("cue-events");
const card = recorded.find((event) => event.event === "cue.recording").data.cue_id;


function run(events, state) {
  const steps = [];
  for (const event of events) {
    const step = reduce(deepFreeze(state), event);
    steps.push({ event: event.event, ...step });
    state = step.state;
  }
  return { state, steps };
}

const learner = (fields) => ({ signed_in: true, profile_id: 7, language: "en", languages: ["en", "es"], email: "a@b.c", ...fields });

test("the recorded session: the language changed twice, an answer uploaded with its results, then signed out", () => {
  const { state, steps } = run(recorded, { ...initialCueState(), answer: newAnswer(card, false) });
  assert.equal(state.answer.state, "uploaded");
  assert.equal(state.answer.evaluationStatus, "ready");
  assert.deepEqual(steps.flatMap((item) => item.effects), [{ type: "language", language: "en" }, { type: "language", language: "fr" },
                                                          { type: "language", language: "en" }], "each signed-in learner's language, for the cards");
  assert.equal(state.learner.signed_in, false);
  assert.deepEqual(state.notices.map((item) => item.key), ["signInAgain"], "the sign-out, told; nothing else along the way");
  for (const step of steps.filter((item) => item.event === "level")) assert.deepEqual(step.changed, ["level"]);
  assert.ok(steps.some((item) => item.changed.includes("answer")));
});

test("an event about nothing the page shows changes nothing, and says so", () => {
  const state = deepFreeze({ ...initialCueState(), answer: newAnswer(card, false) });
  const step = reduce(state, { event: "cue.transcript", data: { recording_id: 999, status: "ready", transcript: "x" } });
  assert.equal(step.state, state, "the same object");
  assert.deepEqual(step.changed, []);
  assert.deepEqual(step.effects, []);
});

test("a learner signed in asks for the language's cards; one signed out for a reason is told", () => {
  let step = reduce(deepFreeze(initialCueState()), { event: "signin.changed", data: { learner: learner({ language: "es" }) } });
  assert.equal(step.state.learner.language, "es");
  assert.deepEqual(step.effects, [{ type: "language", language: "es" }]);
  step = reduce(deepFreeze(step.state), { event: "signin.changed", data: { learner: { signed_in: false }, reason: "refresh_failed" } });
  assert.deepEqual(step.effects, []);
  assert.deepEqual(step.state.notices.map((item) => item.key), ["signInAgain"]);
  assert.ok(step.changed.includes("notices") && step.changed.includes("learner"));
});

test("hands-free, an answer that heard nothing is discarded, told, and listened for again", () => {
  const state = deepFreeze({ ...initialCueState(), handsFree: true, answer: newAnswer(card, true) });
  const step = reduce(state, { event: "cue.discarded", data: { cue_id: card, reason: "no_speech" } });
  assert.equal(step.state.answer, null);
  assert.deepEqual(step.state.notices.map((item) => item.key), ["cueNoSpeech"]);
  assert.deepEqual(step.effects, [{ type: "listenAgain" }]);
  const held = reduce(deepFreeze({ ...initialCueState(), answer: newAnswer(card, false) }), { event: "cue.discarded", data: { cue_id: card, reason: "no_speech" } });
  assert.deepEqual(held.effects, [], "push-to-talk: the learner holds the button again");
});

test("a hands-free answer sent turns hands-free off; a failed upload is told by its reason", () => {
  let step = reduce(deepFreeze({ ...initialCueState(), handsFree: true }), { event: "cue.uploaded", data: { answer_id: "a", recording_id: 5 } });
  assert.equal(step.state.handsFree, false);
  step = reduce(deepFreeze(step.state), { event: "cue.upload_failed", data: { answer_id: "a", reason: "file_too_large", error: "413" } });
  assert.deepEqual(step.state.notices.map((item) => [item.key, item.detail]), [["reason_file_too_large", null]]);
  step = reduce(deepFreeze(step.state), { event: "cue.upload_failed", data: { answer_id: "a", error: "connection refused" } });
  assert.deepEqual(step.state.notices.at(-1), { kind: "error", key: "cueUploadFailed", detail: "connection refused", id: 2 });
});

test("notices: the newest three are kept, numbered, and one is dismissed by its number", () => {
  let state = deepFreeze(initialCueState());
  for (const key of ["a", "b", "c", "d"]) state = deepFreeze(withNotice(state, "warning", key));
  assert.deepEqual(state.notices.map((item) => item.key), ["b", "c", "d"]);
  assert.deepEqual(state.notices.map((item) => item.id), [2, 3, 4]);
  assert.deepEqual(withoutNotice(state, 3).notices.map((item) => item.key), ["b", "d"]);
});
