// The review after a conversation: a progress indication while the tutor marks it
// (`reviewing`, `review.progress`), then each segment with the learner's words, the
// tutor's, and the marks coloured by issue type as seed 001 does (grammar red,
// naturalness orange, sentence structure purple); a question about a segment
// (`correction.ask`) and its answer; 結束學習 (`review.finish`) with a progress indication
// while the summary is made.

import { el } from "../dom.js";
import { t } from "../i18n.js";

export const ISSUE_TYPES = ["grammar", "naturalness", "sentence_structure"];

function issueChip(type) {
  return el("span", { class: `issue issue-${ISSUE_TYPES.includes(type) ? type : "other"}`, data: { issue: type }, text: ISSUE_TYPES.includes(type) ? t(type) : type });
}

function mark(item) {
  const first = item.issue_types?.[0] ?? "other";
  return el("li", { class: `mark mark-${ISSUE_TYPES.includes(first) ? first : "other"}`, data: { mark: item.id } }, [
    el("div", { class: "chips" }, (item.issue_types ?? []).map(issueChip)),
    el("p", { class: "original" }, [el("del", { text: item.original })]),
    el("p", { class: "suggestion" }, [el("strong", { text: `${t("suggestion")}: ` }), item.suggestion]),
    el("p", { class: "explanation", text: item.explanation }),
  ]);
}

function segment(stage, actions, item) {
  const question = el("input", { class: "ask-input", attrs: { type: "text", maxlength: 1000, placeholder: t("askPlaceholder") } });
  const finishing = stage !== "reviewed";
  return el("article", { class: "segment", data: { segment: item.id } }, [
    item.user_text ? el("p", { class: "line you" }, [el("span", { class: "who", text: t("you") }), el("span", { class: "said", text: item.user_text })]) : null,
    item.ai_text ? el("p", { class: "line tutor" }, [el("span", { class: "who", text: t("tutor") }), el("span", { class: "said", text: item.ai_text })]) : null,
    el("ul", { class: "marks" }, (item.ai_marks ?? []).map(mark)),
    el("ul", { class: "corrections" }, (item.corrections ?? []).map((c) => el("li", { class: "correction", data: { correction: c.id } }, [
      el("p", { class: "asked", text: c.user_message }),
      el("p", { class: "answer", text: c.correction }),
      el("p", { class: "explanation", text: c.explanation }),
    ]))),
    el("form", { class: "ask", on: { submit: (event) => {
      event.preventDefault();
      const message = question.value.trim();
      if (!message) return;
      actions.askCorrection(item.id, message).then((ok) => { if (ok) question.value = ""; });
    } } }, [question, el("button", { class: "small", text: t("askCorrection"), attrs: { type: "submit", disabled: finishing } })]),
  ]);
}

/** `view`: { stage, review, notices }; `actions`: { askCorrection(segmentId, message) -> Promise<ok>, finish() }. */
export function renderReview(view, actions) {
  const { stage, review, notices } = view;
  const busy = stage === "reviewing" || stage === "finishing";
  const progress = busy ? el("div", { class: "progress", id: "review-progress", attrs: { role: "progressbar" } }, [
    el("div", { class: "spinner" }),
    el("span", { text: stage === "finishing" ? t("stageFinishing") : t("reviewProgress") }),
  ]) : null;
  return el("section", { class: "screen review", id: "screen-review", data: { stage } }, [
    el("h1", { text: t("reviewTitle") }),
    progress,
    el("div", { class: "notices", id: "notices" }, notices.map((item) =>
      el("div", { class: `notice ${item.kind}`, data: { notice: item.key }, text: t(item.key) + (item.detail ? ` ${item.detail}` : "") }))),
    el("div", { class: "segments", id: "segments" }, (review?.segments ?? []).map((item) => segment(stage, actions, item))),
    el("div", { class: "controls" }, [
      el("button", { class: "primary", id: "finish", text: t("finishLearning"), attrs: { disabled: stage !== "reviewed" }, on: { click: () => actions.finish() } }),
    ]),
  ]);
}
