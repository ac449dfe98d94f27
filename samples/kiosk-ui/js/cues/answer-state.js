// One cue answer's walk, as pure functions of the daemon's `cue` events: recording (or
// listening, hands-free), recorded, kept on the kiosk (saved), uploading, waiting to upload
// again, uploaded, then its transcript and evaluation; kept when an upload failed. An event
// about another card, answer or recording leaves the answer as it is (the same object), and
// no function writes into the answer it is given. Tested under `node --test` (Tests/kiosk-ui/).

import { Event } from "../protocol.js";

/** An answer the learner starts on card `cueId`. */
export function newAnswer(cueId, handsFree) {
  return { cueId, state: handsFree ? "listening" : "recording", steps: [] };
}

/** The answer after `event` (null when the daemon discarded it). */
export function answerAfter(answer, event) {
  if (!answer) return answer;
  const data = event.data ?? {};
  const card = answer.cueId === data.cue_id, saved = answer.answerId !== undefined && answer.answerId === data.answer_id;
  const recording = answer.recordingId !== undefined && answer.recordingId === data.recording_id;
  switch (event.event) {
    case Event.CueRecordingStarted: return card ? { ...answer, state: data.hands_free ? "listening" : "recording" } : answer;
    case Event.CueRecorded: return card ? { ...answer, state: "recorded", duration: data.duration_s } : answer;
    case Event.CueDiscarded: return card ? null : answer;
    case Event.CueSpooled: return card ? { ...answer, state: "saved", answerId: data.answer_id } : answer;
    case Event.CueUploadStep: return saved ? { ...answer, state: "uploading", steps: [...answer.steps, data.step] } : answer;
    case Event.CueUploadRetrying: return saved ? { ...answer, state: "waiting" } : answer;
    case Event.CueUploadFailed: return saved ? { ...answer, state: "kept" } : answer;
    case Event.CueUploaded: return saved ? { ...answer, state: "uploaded", recordingId: data.recording_id } : answer;
    case Event.CueTranscript: return recording ? { ...answer, transcriptStatus: data.status, transcript: data.transcript } : answer;
    case Event.CueEvaluation: return recording ? { ...answer, evaluationStatus: data.status, evaluation: data.evaluation } : answer;
    case Event.CueResultsFailed: return recording ? { ...answer, failed: data.step } : answer;
    default: return answer;
  }
}

/** Whether an answer is on its way (saved, uploading, results coming): no new one yet. */
export function isBusy(answer) {
  if (!answer || ["listening", "recording", "kept"].includes(answer.state)) return false;
  if (answer.state !== "uploaded") return true;
  return answer.evaluationStatus !== "ready" && !answer.failed;
}
