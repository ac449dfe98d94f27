// The session's summary (`session.completed`): strengths, the weaknesses by issue type in
// their colours, the overall comment; 完成 closes the session and goes home.

import { el } from "../dom.js";
import { t } from "../i18n.js";
import { ISSUE_TYPES } from "./review.js";

/** `view`: { summary, note } (the session's summary, or why there is none); `actions`: { close() }. */
export function renderSummary(view, actions) {
  const { summary, note } = view;
  const body = summary ? [
    el("h2", { text: t("strengths") }),
    el("ul", { class: "strengths", id: "strengths" }, (summary.strengths ?? []).map((text) => el("li", { text }))),
    el("h2", { text: t("weaknesses") }),
    el("ul", { class: "weaknesses", id: "weaknesses" }, ISSUE_TYPES.filter((type) => summary.weaknesses?.[type]).map((type) =>
      el("li", { class: `weakness mark-${type}`, data: { issue: type } }, [
        el("span", { class: `issue issue-${type}`, text: t(type) }),
        el("span", { text: summary.weaknesses[type] }),
      ]))),
    el("h2", { text: t("overall") }),
    el("p", { class: "overall", id: "overall", text: summary.overall }),
  ] : [el("p", { class: "notice warning", id: "no-summary", text: t("noSummary") + (note ? ` (${note})` : "") })];
  return el("section", { class: "screen summary", id: "screen-summary" }, [
    el("h1", { text: t("summaryTitle") }),
    ...body,
    el("div", { class: "controls" }, [el("button", { class: "primary", id: "done", text: t("done"), on: { click: () => actions.close() } })]),
  ]);
}
