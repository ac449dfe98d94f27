// The learner's answers, newest first (`cue.history`), those made on the phone app too:
// each with its card, its date and how far its results are; one opened shows them whole
// and can be heard again.

import { el } from "../dom.js";
import { t } from "../i18n.js";
import { renderTranscript, renderEvaluation } from "./results.js";

function statusChip(kind, status) {
  return el("span", { class: `chip status-${status}`, text: `${t(kind)}: ${t(`status_${status}`)}` });
}

/** `view`: { history, viewing } (`cue.history`'s answer, the recording opened); `actions`:
 *  { view(recording or null), askAgain(recordingId), play(recordingId) }. */
export function renderHistory(view, actions) {
  const recording = view.viewing;
  if (recording) {
    return el("section", { class: "screen history-item-view", id: "screen-recording", data: { recording: recording.recording_id } }, [
      el("div", { class: "cue-head" }, [
        el("button", { class: "secondary small", id: "back", text: t("back"), on: { click: () => actions.view(null) } }),
        el("h1", { id: "cue-title", text: recording.cue_title ?? "" }),
      ]),
      recording.transcript_status === "ready" ? renderTranscript("ready", recording.transcript) : el("p", { class: "muted", text: `${t("transcript")}: ${t(`status_${recording.transcript_status}`)}` }),
      recording.evaluation_status === "ready" ? renderEvaluation("ready", recording.evaluation) : null,
      recording.evaluation_status !== "ready" ? el("button", { class: "small", id: "ask-again", text: t("askAgain"), on: { click: () => actions.askAgain(recording.recording_id) } }) : null,
      el("button", { class: "secondary", id: "hear", text: t("hearAnswer"), on: { click: () => actions.play(recording.recording_id) } }),
    ]);
  }
  const history = view.history;
  const items = (history?.recordings ?? []).map((item) => el("button", { class: "card history-item", data: { recording: item.recording_id }, on: { click: () => actions.view(item) } }, [
    el("span", { class: "card-title", text: item.cue_title ?? `#${item.cue_id}` }),
    el("span", { class: "card-body", text: (item.created_at ?? "").slice(0, 16).replace("T", " ") }),
    el("span", { class: "chips" }, [statusChip("transcript", item.transcript_status), statusChip("evaluation", item.evaluation_status)]),
  ]));
  return el("section", { class: "screen history", id: "screen-history" }, [
    el("h1", { text: t("historyTitle") }),
    !history ? el("p", { class: "muted", text: t("loading") }) : items.length === 0 ? el("p", { class: "muted", id: "history-empty", text: t("historyEmpty") }) : null,
    el("div", { class: "history-list" }, items),
    history?.more ? el("p", { class: "muted", text: `+${history.more}` }) : null,
  ]);
}
