// A cue answer's walk without a browser: `answerAfter` fed the events of an answer held aloud
// on practice-sim's Chatterbox mode (recorded from the release daemon through the bridge by
// the browser suite: recorded, kept, the four upload steps, uploaded, transcript and
// evaluation), and cases built by hand. Run by `node --test Tests/kiosk-ui/`.

import assert from "node:assert/strict";
import { test } from "node:test";
import { deepFreeze, recordedEvents } from "./recorded.mjs";
import { answerAfter, isBusy, newAnswer } from "../../samples/kiosk-ui/js/cues/answer-state.js";

const recorded = recordedEvents("cue-events");
const card = recorded.find((event) => event.event === "cue.recording").data.cue_id;


function walk(events, answer = newAnswer(card, false)) {
  const states = [];
  for (const event of events) {
    answer = answerAfter(answer, event);
    states.push({ event: event.event, answer });
  }
  return { answer, states };
}

test("the recorded answer: kept, uploaded in four steps, then its transcript and evaluation", () => {
  const { answer, states } = walk(recorded);
  assert.equal(answer.state, "uploaded");
  assert.deepEqual(answer.steps, ["intent", "put", "complete", "found"]);
  assert.equal(answer.recordingId, recorded.find((event) => event.event === "cue.uploaded").data.recording_id);
  assert.equal(answer.transcriptStatus, "ready");
  assert.ok(answer.transcript.length > 0);
  assert.equal(answer.evaluationStatus, "ready");
  assert.equal(isBusy(answer), false, "the results are in: another answer may start");
  // Busy from the moment it is kept until its evaluation is ready.
  const busy = states.map((s) => [s.event, isBusy(s.answer)]);
  assert.deepEqual(busy.find(([name]) => name === "cue.spooled"), ["cue.spooled", true]);
  assert.equal(busy.filter(([name]) => name === "cue.evaluation").at(-1)[1], false);
});

test("answerAfter never writes into the answer or the event it is given", () => {
  let answer = deepFreeze(newAnswer(card, false));
  for (const event of recorded) answer = deepFreeze(answerAfter(answer, deepFreeze(structuredClone(event))));
  assert.equal(answer.state, "uploaded");
});

test("another card's, answer's or recording's events leave the answer as it is", () => {
  const { answer } = walk(recorded.slice(0, recorded.findIndex((event) => event.event === "cue.uploaded") + 1));
  for (const event of [
    { event: "cue.recording", data: { cue_id: card + 1, hands_free: false } },
    { event: "cue.discarded", data: { cue_id: card + 1, reason: "no_speech" } },
    { event: "cue.upload", data: { cue_id: card, answer_id: "another", step: "put" } },
    { event: "cue.transcript", data: { recording_id: answer.recordingId + 1, status: "ready", transcript: "not ours" } },
    { event: "level", data: { rms_dbfs: -20 } },
  ]) assert.equal(answerAfter(answer, event), answer, event.event);
  // Before it is kept, an answer has no answer id: an event without one is not its.
  const fresh = newAnswer(card, false);
  assert.equal(answerAfter(fresh, { event: "cue.uploaded", data: { cue_id: card, recording_id: 7 } }), fresh);
});

test("hands-free listens first; a discarded answer is gone; a failed upload is kept and not busy", () => {
  let answer = newAnswer(card, true);
  assert.equal(answer.state, "listening");
  assert.equal(isBusy(answer), false);
  assert.equal(answerAfter(answer, { event: "cue.discarded", data: { cue_id: card, reason: "no_speech" } }), null);
  answer = answerAfter(answer, { event: "cue.spooled", data: { cue_id: card, answer_id: "a1" } });
  assert.equal(isBusy(answer), true);
  answer = answerAfter(answer, { event: "cue.upload_retrying", data: { cue_id: card, answer_id: "a1", delay_s: 2 } });
  assert.equal(answer.state, "waiting");
  answer = answerAfter(answer, { event: "cue.upload_failed", data: { cue_id: card, answer_id: "a1", reason: "too_large" } });
  assert.equal(answer.state, "kept");
  assert.equal(isBusy(answer), false, "the learner may answer again");
  assert.equal(answerAfter(null, recorded[0]), null);
});

test("results that failed end the wait", () => {
  let answer = { ...newAnswer(card, false), state: "uploaded", answerId: "a1", recordingId: 3 };
  assert.equal(isBusy(answer), true);
  answer = answerAfter(answer, { event: "cue.results_failed", data: { recording_id: 3, step: "evaluation" } });
  assert.equal(answer.failed, "evaluation");
  assert.equal(isBusy(answer), false);
});
