// What the UI knows, built only from the daemon's replies and events: the session's stage
// (from the snapshot a subscription starts with, then `session.stage`), the conversation's
// lines and notices, the review and the summary. Screens read it and re-render on change.

import { Event } from "./protocol.js";

const CONVERSATION_STAGES = new Set(["starting", "greeting", "ready", "listening", "recording", "uploading", "replying", "ending"]);
const REVIEW_STAGES = new Set(["reviewing", "reviewed", "finishing"]);

export class Store {
  constructor() {
    this.link = { state: "connecting", retryInMs: null, everOpen: false };
    this.session = { stage: "idle", session_id: null, mode: null, topic_id: null };
    this.lines = [];          // {who: "you"|"tutor", text, id}
    this.notices = [];        // {kind, key, detail, turnId, id}
    this.level = null;        // dBFS
    this.speaking = false;
    /** The recorder waits through the learner's pause (`speech.paused`, waiting). */
    this.stillListening = false;
    this.handsFree = false;
    this.review = null;       // the review object (segments, summary)
    this.reviewProgress = null;
    this.summary = null;      // {summary, note}
    this.topics = null;
    this.profile = null;
    this.tab = "practice";    // practice | profile
    this.startedHere = false; // this page asked for the session in progress
    this.listeners = [];
    this.nextId = 1;
  }

  subscribe(listener) { this.listeners.push(listener); }

  setStillListening(on) {
    if (this.stillListening === on) return;
    this.stillListening = on;
    this.changed("stage");
  }

  changed(what) { for (const listener of this.listeners) listener(what); }

  /** The screen the session's stage calls for. */
  get screen() {
    const stage = this.session.stage;
    if (CONVERSATION_STAGES.has(stage) || stage === "failed") return "conversation";
    if (REVIEW_STAGES.has(stage)) return "review";
    if (stage === "completed") return "summary";
    return this.tab === "profile" ? "profile" : "topics";
  }

  notice(kind, key, detail = null, turnId = null) {
    this.notices.push({ kind, key, detail, turnId, id: this.nextId++ });
    if (this.notices.length > 4) this.notices.shift();
    this.changed("notices");
  }

  dismiss(noticeId) {
    this.notices = this.notices.filter((n) => n.id !== noticeId);
    this.changed("notices");
  }

  line(who, text) {
    this.lines.push({ who, text, id: this.nextId++ });
    this.changed("lines");
  }

  /** A new session: what the last one said goes. */
  resetConversation() {
    this.lines = [];
    this.notices = [];
    this.review = null;
    this.reviewProgress = null;
    this.summary = null;
  }

  /** Applies one event of the daemon. */
  apply(event) {
    const data = event.data ?? {};
    switch (event.event) {
      case Event.DaemonSnapshot:
        this.setSession(data.session);
        if (data.session.stage === "idle") this.startedHere = false;
        this.changed("screen");
        break;
      case Event.SessionStage: {
        const before = this.screen;
        this.setSession(data);
        if (data.stage === "idle") this.startedHere = false;
        // A pause is waited through only while recording.
        if (data.stage !== "recording") this.stillListening = false;
        // The talk's notices stay with the talk.
        if (before !== this.screen) this.notices = [];
        this.changed(before === this.screen ? "stage" : "screen");
        break;
      }
      case Event.SessionCreated:
        if (!this.startedHere) {
          this.resetConversation();
          this.notice("info", "otherClient");
        }
        break;
      case Event.Transcript: this.line("you", data.text); break;
      case Event.ReplyText: this.line("tutor", data.text); break;
      case Event.TurnDiscarded:
        // A cancel is the learner's own doing (hands-free off, `turn.cancel`): nothing to tell.
        if (data.reason === "no_speech") this.notice("warning", "noSpeech");
        else if (data.reason === "device_error") this.notice("error", "deviceError", data.message);
        break;
      case Event.TurnUnanswered:
      case Event.GreetingUnanswered: {
        const keys = { empty_transcript: "emptyAnswer", no_audio: "noAudio", no_transcript: "noTranscript", too_short: "tooShort" };
        this.notice("warning", keys[data.outcome] ?? "noAudio");
        break;
      }
      case Event.TurnRetrying:
      case Event.ReplyRetrying:
        this.notice("warning", "retrying", data.message);
        break;
      case Event.TurnPending: this.notice("pending", "pending", data.message, data.turn_id); break;
      case Event.TurnRejected: this.notice("error", "rejected", data.message); break;
      case Event.TurnFailed: this.notice("error", "turnFailed", data.message); break;
      case Event.ReplyIncomplete: this.notice("error", "incomplete", data.message); break;
      case Event.GreetingFailed: this.notice("error", "greetingFailed", data.message); break;
      case Event.SessionFailed: this.notice("error", "sessionFailed", data.message); break;
      case Event.SpoolDiscarded:
        this.notices = this.notices.filter((n) => n.turnId !== data.turn_id);
        this.changed("notices");
        break;
      case Event.Level:
        this.level = data.rms_dbfs;
        this.changed("level");
        break;
      case Event.SpeechStarted: this.speaking = true; this.setStillListening(false); this.changed("level"); break;
      case Event.SpeechStopped: this.speaking = false; this.setStillListening(false); this.changed("level"); break;
      // Learned endpointing: the learner paused and smart-turn heard more to come.
      case Event.SpeechPaused: this.setStillListening(data.waiting === true); break;
      case Event.ReviewProgress: this.reviewProgress = data; this.changed("review"); break;
      // Copies: corrections asked later are added to the segments here.
      case Event.ReviewReady: this.review = structuredClone(data); this.changed("review"); break;
      case Event.ReviewFailed:
      case Event.ReviewFinishFailed:
        this.notice("error", "actionFailed", data.message);
        break;
      case Event.CorrectionAdded: this.addCorrection(data); break;
      case Event.CorrectionFailed: this.notice("error", "actionFailed", data.message); break;
      case Event.SessionCompleted:
        this.summary = { summary: data.summary, note: data.note };
        if (data.review) this.review = structuredClone(data.review);
        this.changed("summary");
        break;
      default:
        break;
    }
  }

  setSession(session) {
    this.session = { stage: session.stage, session_id: session.session_id, mode: session.mode, topic_id: session.topic_id ?? this.session.topic_id };
  }

  addCorrection(correction) {
    const segment = this.review?.segments?.find((s) => s.id === correction.segment_id);
    if (!segment) return;
    segment.corrections = segment.corrections ?? [];
    if (!segment.corrections.some((c) => c.id === correction.id)) segment.corrections.push(correction);
    this.changed("review");
  }
}
