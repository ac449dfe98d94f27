// Cue practice's page state as pure functions of the daemon's events, as conversation-state.js
// is for the conversation: the learner, the answer being made (its walk is answer-state.js's),
// the notices, the input level, whether the learner is heard, hands-free. No function writes
// into the state it is given; what the page must do besides (ask for the cards of a language
// the learner changed to, listen again after a hands-free answer heard nothing) comes back as
// effects for it to decide. Tested under `node --test` (Tests/kiosk-ui/).

import { Event } from "../protocol.js";
import { answerAfter } from "./answer-state.js";

/** The page before the daemon has said anything. */
export function initialCueState() {
  return { learner: null, answer: null, notices: [], nextNoticeId: 1, level: null, speaking: false, handsFree: false };
}

/** The state with a notice added (the newest three are kept). */
export function withNotice(state, kind, key, detail = null) {
  const notices = [...state.notices, { kind, key, detail, id: state.nextNoticeId }].slice(-3);
  return { ...state, notices, nextNoticeId: state.nextNoticeId + 1 };
}

/** The state without notice `id`. */
export function withoutNotice(state, id) {
  return { ...state, notices: state.notices.filter((item) => item.id !== id) };
}

/**
 * The state after `event`: `{ state, changed, effects }`. `changed` names what moved
 * ("learner", "answer", "notices", "level": the level meter alone), empty when nothing did;
 * `effects` are `{ type: "language", language }` (a signed-in learner whose language may be
 * new) and `{ type: "listenAgain" }` (hands-free, the answer heard no speech).
 */
export function reduce(state, event) {
  const data = event.data ?? {};
  const answer = answerAfter(state.answer, event);
  let next = answer === state.answer ? state : { ...state, answer };
  const changed = new Set(answer === state.answer ? [] : ["answer"]);
  const effects = [];
  switch (event.event) {
    case Event.SignInChanged:
      next = { ...next, learner: data.learner };
      changed.add("learner");
      if (data.learner.signed_in && data.learner.profile_id) effects.push({ type: "language", language: data.learner.language ?? null });
      if (!data.learner.signed_in && data.reason) {
        next = withNotice(next, "warning", "signInAgain");
        changed.add("notices");
      }
      break;
    case Event.Level: next = { ...next, level: data.rms_dbfs }; changed.add("level"); break;
    case Event.SpeechStarted: next = { ...next, speaking: true }; changed.add("level"); break;
    case Event.SpeechStopped: next = { ...next, speaking: false }; changed.add("level"); break;
    case Event.CueDiscarded:
      if (data.reason === "no_speech") next = withNotice(next, "warning", "cueNoSpeech");
      else if (data.reason === "device_error") next = withNotice(next, "error", "deviceError", data.message);
      changed.add("notices");
      if (next.handsFree && data.reason === "no_speech") effects.push({ type: "listenAgain" });
      break;
    case Event.CueSpoolFailed:
      next = withNotice(next, "error", "cueNotKept", data.message);
      changed.add("notices");
      break;
    case Event.CueUploadFailed:
      next = withNotice(next, "error", data.reason ? `reason_${data.reason}` : "cueUploadFailed", data.reason ? null : data.error);
      changed.add("notices");
      break;
    case Event.CueUploaded:
      // A hands-free answer is one answer: the toggle goes off once it is sent.
      if (next.handsFree) {
        next = { ...next, handsFree: false };
        changed.add("answer");
      }
      break;
    default:
      break;
  }
  return { state: next, changed: [...changed], effects };
}
