// The learner UI's conversation state without a browser: `reduce` fed the events a real
// conversation sent (recorded from the release daemon through the bridge by the browser
// suite: a greeting, a push-to-talk turn, a hands-free turn, a cancelled and a silent one, a
// typed turn holding HTML, the review with a correction, the summary, home), and edge cases
// built by hand. Run by `node --test Tests/kiosk-ui/` (KioskUIStateTests runs it in the suite).

import assert from "node:assert/strict";
import { test } from "node:test";
import { deepFreeze, recordedEvents } from "./recorded.mjs";
import { initialState, newConversation, reduce, screenOf } from "../../samples/kiosk-ui/js/conversation-state.js";

const recorded = recordedEvents("conversation-events");

/** The events, as the page took them: the snapshot its subscription began with, then (when
 *  this page asked for the session, as `startSession` leaves the state) the learner's tap. */
function replay(events, { startedHere = true } = {}) {
  let state = initialState();
  const steps = [];
  for (const event of events) {
    const { state: next, changed } = reduce(state, event);
    steps.push({ event, state: next, changed });
    state = next;
    if (event.event === "snapshot" && startedHere) state = { ...newConversation(state, true), session: { ...state.session, topic_id: "travel" } };
  }
  return { state, steps };
}

const after = (steps, name, nth = 1) => steps.filter((step) => step.event.event === name)[nth - 1];

test("the recorded conversation ends at home with its lines, review, correction and summary", () => {
  const { state } = replay(recorded);
  assert.equal(state.session.stage, "idle");
  assert.equal(screenOf(state), "topics");
  assert.equal(state.startedHere, false, "back at idle, the next session is no longer this page's");
  assert.deepEqual(state.lines.map((line) => line.who), ["tutor", "you", "tutor", "you", "tutor", "you", "tutor"]);
  // Kept as the daemon sent it: drawing it inert is the page's (the browser suite checks that).
  assert.equal(state.lines[5].text, 'I saw <img src=x onerror="window.__xss=1"> and <script>window.__xss=2</script> there');
  assert.equal(new Set(state.lines.map((line) => line.id)).size, state.lines.length, "line ids are unique");
  const correction = recorded.find((event) => event.event === "correction.added").data;
  const segment = state.review.segments.find((s) => s.id === correction.segment_id);
  assert.deepEqual(segment.corrections.map((c) => c.id), [correction.id], "the correction is on its segment once");
  assert.ok(state.summary.summary, "the summary is kept");
});

test("reduce never writes into the state or the event it is given", () => {
  let state = deepFreeze({ ...newConversation(initialState(), true) });
  for (const event of recorded) {
    state = deepFreeze(reduce(state, deepFreeze(structuredClone(event))).state);  // throws on a write (modules are strict)
  }
  // A correction told twice (here and by the daemon) on a frozen review.
  const correction = recorded.find((event) => event.event === "correction.added");
  assert.doesNotThrow(() => reduce(state, deepFreeze(structuredClone(correction))));
});

test("what changed: the stage within a screen, the screen when the stage leaves it, and its notices with it", () => {
  const { steps } = replay(recorded);
  const recording = steps.find((step) => step.event.event === "session.stage" && step.event.data.stage === "recording");
  assert.deepEqual(recording.changed, ["stage"]);
  const reviewing = steps.find((step) => step.event.event === "session.stage" && step.event.data.stage === "reviewing");
  assert.deepEqual(reviewing.changed, ["screen"]);
  assert.equal(screenOf(reviewing.state), "review");
  assert.deepEqual(reviewing.state.notices, [], "the talk's notices stay with the talk");
});

test("a silent turn is told, a cancelled one is not", () => {
  const { steps } = replay(recorded);
  const cancelled = after(steps, "turn.discarded", 1);
  assert.equal(cancelled.event.data.reason, "cancelled");
  assert.deepEqual(cancelled.changed, []);
  const silent = after(steps, "turn.discarded", 2);
  assert.equal(silent.event.data.reason, "no_speech");
  assert.deepEqual(silent.state.notices.map((n) => n.key), ["noSpeech"]);
});

test("a session another client started clears the page and says so; one this page started does not", () => {
  const theirs = replay(recorded.slice(0, 3), { startedHere: false });
  assert.deepEqual(theirs.state.notices.map((n) => n.key), ["otherClient"]);
  const ours = replay(recorded.slice(0, 3));
  assert.deepEqual(ours.state.notices, []);
});

test("at most four notices, the oldest dropped; a discarded turn takes its pending notice away", () => {
  let state = initialState();
  for (let n = 1; n <= 6; n++) state = reduce(state, { event: "turn.failed", data: { message: `failure ${n}` } }).state;
  assert.deepEqual(state.notices.map((n) => n.detail), ["failure 3", "failure 4", "failure 5", "failure 6"]);
  state = reduce(state, { event: "turn.pending", data: { turn_id: "t1", message: "kept" } }).state;
  state = reduce(state, { event: "turn.pending", data: { turn_id: "t2", message: "kept" } }).state;
  const { state: next, changed } = reduce(state, { event: "spool.discarded", data: { turn_id: "t1" } });
  assert.deepEqual(changed, ["notices"]);
  assert.deepEqual(next.notices.filter((n) => n.key === "pending").map((n) => n.turnId), ["t2"]);
});

test("a correction for a segment the review does not have changes nothing", () => {
  const { state } = replay(recorded.slice(0, recorded.findIndex((event) => event.event === "review.ready") + 1));
  const { state: next, changed } = reduce(state, { event: "correction.added", data: { id: 99, segment_id: 12345 } });
  assert.equal(next, state);
  assert.deepEqual(changed, []);
});

test("still listening: shown while the recorder waits through a pause, gone when the turn moves on", () => {
  let state = reduce(initialState(), { event: "session.stage", data: { stage: "recording", session_id: "s", mode: "conversation" } }).state;
  let step = reduce(state, { event: "speech.paused", data: { waiting: true, probability: 0.2 } });
  assert.equal(step.state.stillListening, true);
  assert.deepEqual(step.changed, ["stage"]);
  assert.deepEqual(reduce(step.state, { event: "speech.paused", data: { waiting: true } }).changed, [], "no redraw for the same");
  step = reduce(step.state, { event: "session.stage", data: { stage: "uploading", session_id: "s", mode: "conversation" } });
  assert.equal(step.state.stillListening, false);
});

test("still listening: a pause told after the turn moved on is not the turn's", () => {
  const uploading = reduce(initialState(), { event: "session.stage", data: { stage: "uploading", session_id: "s", mode: "conversation" } }).state;
  const step = reduce(uploading, { event: "speech.paused", data: { waiting: true, probability: 0.2 } });
  assert.equal(step.state.stillListening, false);
  assert.deepEqual(step.changed, []);
});

test("how the daemon hears comes with the snapshot and follows speech.models", () => {
  const failed = { endpoint: "hangover", configured: "model", models: "failed", error: "missing" };
  let { state, changed } = reduce(initialState(), { event: "snapshot", data: { session: { stage: "idle" }, speech: failed } });
  assert.deepEqual(state.hearing, failed);
  assert.deepEqual(changed, ["screen"]);
  ({ state, changed } = reduce(state, { event: "speech.models", data: { hearing: { endpoint: "model", configured: "model", models: "ready" } } }));
  assert.equal(state.hearing.models, "ready");
  assert.deepEqual(changed, ["stage"]);
  // An older daemon's snapshot says nothing of it.
  ({ state } = reduce(state, { event: "snapshot", data: { session: { stage: "idle" } } }));
  assert.equal(state.hearing, null);
});

test("a replay is shown while it plays, an earlier replay's end does not end a later one, and the rate follows the daemon", () => {
  const ev = (event, data) => deepFreeze({ type: "event", event, data });
  let state = reduce(initialState(), ev("snapshot", { session: { stage: "ready", session_id: "s1", mode: "conversation" }, playback_rate: 0.85 })).state;
  assert.equal(state.playbackRate, 0.85, "the snapshot's rate");
  assert.equal(state.replay, null);
  state = reduce(state, ev("reply.replaying", { rate: 0.75, duration_s: 4, turn_id: null, greeting: true, sound: 7 })).state;
  assert.deepEqual(state.replay, { rate: 0.75, sound: 7 });
  state = reduce(state, ev("reply.replaying", { rate: 0.6, duration_s: 5, turn_id: null, greeting: true, sound: 8 })).state;
  // The first replay's end arrives after the second began: the second still plays.
  const stale = reduce(state, ev("reply.replay_finished", { interrupted: true, played_s: 0.4, turn_id: null, sound: 7 }));
  assert.deepEqual(stale.state.replay, { rate: 0.6, sound: 8 });
  assert.deepEqual(stale.changed, []);
  state = reduce(stale.state, ev("reply.replay_finished", { interrupted: false, played_s: 5, turn_id: null, sound: 8 })).state;
  assert.equal(state.replay, null);
  state = reduce(state, ev("playback.rate_changed", { rate: 1 })).state;
  assert.equal(state.playbackRate, 1);
  // A session that closes takes a replay that plays with it.
  state = reduce(state, ev("reply.replaying", { rate: 1, duration_s: 3, turn_id: null, greeting: true, sound: 9 })).state;
  state = reduce(state, ev("session.stage", { stage: "idle", session_id: null, mode: null })).state;
  assert.equal(state.replay, null);
});
