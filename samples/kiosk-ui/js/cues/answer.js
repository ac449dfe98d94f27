// Answering a card aloud: push-to-talk (held: `cue.record`, released: `cue.stop`) or
// hands-free (the recorder ends the answer on silence); the answer's walk as the daemon
// tells it (kept on the kiosk, uploading, uploaded), then its transcript and evaluation as
// they become ready; the learner hears the answer again (`cue.play`), or asks again for
// results that fell back (`cue.results`).

import { el } from "../dom.js";
import { t } from "../i18n.js";
import { levelBar } from "../screens/conversation.js";
import { renderTranscript, renderEvaluation } from "./results.js";

const STATE_KEYS = {
  listening: "stageListening", recording: "stageRecording", recorded: "answerSaving", saved: "answerSaved", uploading: "answerUploading",
  waiting: "answerWaiting", kept: "answerKept", uploaded: "answerUploaded",
};

/** `view`: { cue, answer, handsFree, level, speaking, talkButton (the page's, dressed) };
 *  `actions`: { setHandsFree(on), askAgain(recordingId), play(recordingId), home() }. */
export function renderAnswer(view, actions) {
  const { cue, answer } = view;
  const handsFree = el("label", { class: "toggle" }, [
    el("input", { id: "cue-hands-free", attrs: { type: "checkbox", checked: view.handsFree }, on: { change: (event) => actions.setHandsFree(event.target.checked) } }),
    el("span", { text: t("handsFree") }),
  ]);
  const parts = [];
  if (answer?.state) {
    parts.push(el("div", { class: `progress answer-${answer.state}`, id: "answer-progress", data: { state: answer.state } }, [
      ["recorded", "uploading", "saved"].includes(answer.state) ? el("div", { class: "spinner" }) : null,
      el("span", { text: t(STATE_KEYS[answer.state] ?? "answerSaved") }),
    ]));
  }
  if (answer?.recordingId) {
    parts.push(renderTranscript(answer.transcriptStatus, answer.transcript));
    if (answer.transcriptStatus === "ready") parts.push(renderEvaluation(answer.evaluationStatus, answer.evaluation));
    if (answer.failed) {
      parts.push(el("div", { class: "notice error", id: "results-failed" }, [
        el("span", { class: "notice-text", text: t(answer.failed === "transcription" ? "transcriptFailed" : "evaluationFailed") }),
        el("button", { class: "small", id: "ask-again", text: t("askAgain"), on: { click: () => actions.askAgain(answer.recordingId) } }),
      ]));
    }
    parts.push(el("div", { class: "row" }, [
      el("button", { class: "secondary", id: "hear", text: t("hearAnswer"), on: { click: () => actions.play(answer.recordingId) } }),
      // Heard again slower, at the same pitch, as the tutor's replies can be (issue 69).
      el("button", { class: "secondary", id: "hear-slower", text: `🐢 ${t("replaySlower")}`, on: { click: () => actions.play(answer.recordingId, 0.75) } }),
    ]));
  }
  return el("section", { class: "screen answer", id: "screen-answer", data: { cue: cue.cue_id } }, [
    el("div", { class: "cue-head" }, [
      el("button", { class: "secondary small", id: "back", text: t("back"), on: { click: () => actions.home() } }),
      el("h1", { id: "cue-title", text: cue.title }),
    ]),
    cue.details ? el("p", { class: "cue-details", id: "cue-details", text: cue.details }) : null,
    el("div", { class: "controls" }, [
      el("div", { class: "row" }, [levelBar(view), handsFree]),
      view.talkButton,
    ]),
    ...parts,
  ]);
}
