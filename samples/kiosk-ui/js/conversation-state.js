// The conversation as the page knows it, as pure functions of the daemon's events:
// `reduce(state, event)` returns the next state and what changed (for the screens to redraw),
// and touches neither its input nor the page. Built only from the daemon's replies and
// events: the session's stage (from the snapshot a subscription starts with, then
// `session.stage`), the conversation's lines and notices, the review and the summary.
// Tested without a browser on recorded event streams (`node --test`, Tests/kiosk-ui/).

import { Event } from "./protocol.js";

const CONVERSATION_STAGES = new Set(["starting", "greeting", "ready", "listening", "recording", "uploading", "replying", "ending"]);
const REVIEW_STAGES = new Set(["reviewing", "reviewed", "finishing"]);
/** Notices shown at once; the oldest goes first. */
const MAX_NOTICES = 4;

export function initialState() {
  return {
    session: { stage: "idle", session_id: null, mode: null, topic_id: null },
    lines: [],            // {who: "you"|"tutor", text, turnId (a spoken turn's), id}
    notices: [],          // {kind, key, detail, turnId, id}
    level: null,          // dBFS
    speaking: false,
    /** The recorder waits through the learner's pause (`speech.paused`, waiting). */
    stillListening: false,
    /** How the daemon hears the end of a hands-free turn (`status.speech`): null until told. */
    hearing: null,
    review: null,         // the review object (segments, summary)
    reviewProgress: null,
    summary: null,        // {summary, note}
    tab: "practice",      // practice | profile
    /** The rate replies play at (`playback.rate`), and a replay of the last reply playing. */
    playbackRate: 1,
    replay: null,         // {rate, sound, turnId (the learner's turn, `turn.replay`)} while a replay plays
    startedHere: false,   // this page asked for the session in progress
    nextId: 1,
  };
}

/** The screen the session's stage calls for. */
export function screenOf(state) {
  const stage = state.session.stage;
  if (CONVERSATION_STAGES.has(stage) || stage === "failed") return "conversation";
  if (REVIEW_STAGES.has(stage)) return "review";
  if (stage === "completed") return "summary";
  return state.tab === "profile" ? "profile" : "topics";
}

export function withNotice(state, kind, key, detail = null, turnId = null) {
  const notices = [...state.notices, { kind, key, detail, turnId, id: state.nextId }].slice(-MAX_NOTICES);
  return { ...state, notices, nextId: state.nextId + 1 };
}

export function withoutNotice(state, noticeId) {
  return { ...state, notices: state.notices.filter((n) => n.id !== noticeId) };
}

/** A new session: what the last one said goes. */
export function newConversation(state, startedHere) {
  return { ...state, lines: [], notices: [], review: null, reviewProgress: null, summary: null, replay: null, startedHere };
}

/** A correction (asked here, or told by the daemon) added to its segment once. */
export function withCorrection(state, correction) {
  const segments = state.review?.segments;
  if (!segments?.some((s) => s.id === correction.segment_id)) return state;
  return {
    ...state,
    review: {
      ...state.review,
      segments: segments.map((segment) => segment.id !== correction.segment_id || (segment.corrections ?? []).some((c) => c.id === correction.id)
        ? segment
        : { ...segment, corrections: [...(segment.corrections ?? []), correction] }),
    },
  };
}

function withLine(state, who, text, turnId = null) {
  return { ...state, lines: [...state.lines, { who, text, turnId, id: state.nextId }], nextId: state.nextId + 1 };
}

function withSession(state, session) {
  const next = { stage: session.stage, session_id: session.session_id, mode: session.mode, topic_id: session.topic_id ?? state.session.topic_id };
  return { ...state, session: next, startedHere: session.stage === "idle" ? false : state.startedHere };
}

const UNANSWERED = { empty_transcript: "emptyAnswer", no_audio: "noAudio", no_transcript: "noTranscript", too_short: "tooShort" };

/** One event of the daemon: `{ state, changed }`, `changed` naming what the screens redraw. */
export function reduce(state, event) {
  const data = event.data ?? {};
  const told = (kind, key, detail = null, turnId = null) => ({ state: withNotice(state, kind, key, detail, turnId), changed: ["notices"] });
  switch (event.event) {
    case Event.DaemonSnapshot:
      return { state: { ...withSession(state, data.session), hearing: data.speech ?? null, playbackRate: data.playback_rate ?? 1 }, changed: ["screen"] };
    case Event.PlaybackRateChanged: return { state: { ...state, playbackRate: data.rate }, changed: ["stage"] };
    case Event.ReplyReplaying: return { state: { ...state, replay: { rate: data.rate, sound: data.sound } }, changed: ["stage"] };
    case Event.TurnReplaying: return { state: { ...state, replay: { rate: data.rate, sound: data.sound, turnId: data.turn_id } }, changed: ["stage"] };
    case Event.TurnReplayFinished:
    case Event.ReplyReplayFinished:
      // The end of an earlier replay, after a new one began, is not the new one's.
      if (state.replay && state.replay.sound !== data.sound) return { state, changed: [] };
      return { state: { ...state, replay: null }, changed: ["stage"] };
    // The speech models loaded, were let go or failed.
    case Event.SpeechModels: return { state: { ...state, hearing: data.hearing ?? null }, changed: ["stage"] };
    case Event.SessionStage: {
      let next = withSession(state, data);
      // A session that closed took its replay with it.
      if (data.stage === "idle") next = { ...next, replay: null };
      // A pause is waited through only while recording.
      if (data.stage !== "recording") next = { ...next, stillListening: false };
      // The talk's notices stay with the talk.
      const moved = screenOf(state) !== screenOf(next);
      if (moved) next = { ...next, notices: [] };
      return { state: next, changed: [moved ? "screen" : "stage"] };
    }
    case Event.SessionCreated:
      if (state.startedHere) return { state, changed: [] };
      return { state: withNotice(newConversation(state, false), "info", "otherClient"), changed: ["notices"] };
    case Event.Transcript: return { state: withLine(state, "you", data.text, data.turn_id ?? null), changed: ["lines"] };
    case Event.ReplyText: return { state: withLine(state, "tutor", data.text), changed: ["lines"] };
    case Event.TurnDiscarded:
      // A cancel is the learner's own doing (hands-free off, `turn.cancel`): nothing to tell.
      if (data.reason === "no_speech") return told("warning", "noSpeech");
      if (data.reason === "device_error") return told("error", "deviceError", data.message);
      return { state, changed: [] };
    case Event.TurnUnanswered:
    case Event.GreetingUnanswered:
      return told("warning", UNANSWERED[data.outcome] ?? "noAudio");
    case Event.TurnRetrying:
    case Event.ReplyRetrying:
      return told("warning", "retrying", data.message);
    case Event.TurnPending: return told("pending", "pending", data.message, data.turn_id);
    case Event.TurnRejected: return told("error", "rejected", data.message);
    case Event.TurnFailed: return told("error", "turnFailed", data.message);
    case Event.ReplyIncomplete: return told("error", "incomplete", data.message);
    case Event.GreetingFailed: return told("error", "greetingFailed", data.message);
    case Event.SessionFailed: return told("error", "sessionFailed", data.message);
    case Event.SpoolDiscarded:
      return { state: { ...state, notices: state.notices.filter((n) => n.turnId !== data.turn_id) }, changed: ["notices"] };
    case Event.Level: return { state: { ...state, level: data.rms_dbfs }, changed: ["level"] };
    case Event.SpeechStarted:
    case Event.SpeechStopped: {
      const stopped = state.stillListening;
      const next = { ...state, speaking: event.event === Event.SpeechStarted, stillListening: false };
      return { state: next, changed: stopped ? ["stage", "level"] : ["level"] };
    }
    // Learned endpointing: the learner paused and smart-turn heard more to come.
    // Only while recording: a pause waited through after the turn ended is no turn's.
    case Event.SpeechPaused: {
      const waiting = data.waiting === true && state.session?.stage === "recording";
      return waiting === state.stillListening ? { state, changed: [] } : { state: { ...state, stillListening: waiting }, changed: ["stage"] };
    }
    case Event.ReviewProgress: return { state: { ...state, reviewProgress: data }, changed: ["review"] };
    case Event.ReviewReady: return { state: { ...state, review: data }, changed: ["review"] };
    case Event.ReviewFailed:
    case Event.ReviewFinishFailed:
    case Event.CorrectionFailed:
      return told("error", "actionFailed", data.message);
    case Event.CorrectionAdded: {
      const next = withCorrection(state, data);
      return { state: next, changed: next === state ? [] : ["review"] };
    }
    case Event.SessionCompleted:
      return { state: { ...state, summary: { summary: data.summary, note: data.note }, review: data.review ?? state.review }, changed: ["summary"] };
    default:
      return { state, changed: [] };
  }
}
