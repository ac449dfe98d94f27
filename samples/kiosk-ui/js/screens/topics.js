// Home: the topics from `topics` (zh-TW label first, English beneath), the weak-point
// review card, and the needs-review banner when the profile says so. Offline, the daemon
// answers the last list with `stale`; the screen says so.

import { el } from "../dom.js";
import { t, language } from "../i18n.js";

/** `view`: { topics, profile } as the daemon answered them; `actions`: { startSession(mode, topicId) }. */
export function renderTopics(view, actions) {
  const { topics, profile } = view;
  const cards = [];
  if (profile?.profile?.needs_review) {
    cards.push(el("div", { class: "banner warning", id: "needs-review", text: t("needsReview") }));
  }
  if (topics?.stale) {
    cards.push(el("div", { class: "banner offline", id: "topics-stale", text: t("offlineTopics") }));
  }
  cards.push(el("button", {
    class: "card review-card", id: "review-mode",
    on: { click: () => actions.startSession("review", null) },
  }, [el("span", { class: "card-title", text: t("reviewModeTitle") }), el("span", { class: "card-body", text: t("reviewModeBody") })]));
  if (!topics) {
    cards.push(el("p", { class: "muted", text: t("loading") }));
  } else if (topics.topics.length === 0) {
    cards.push(el("p", { class: "muted", text: t("noTopics") }));
  }
  const grid = el("div", { class: "topic-grid" }, (topics?.topics ?? []).map((topic) => {
    const [first, second] = language() === "en" ? [topic.label_en, topic.label_zh] : [topic.label_zh, topic.label_en];
    return el("button", {
      class: "card topic" + (topics.stale ? " stale" : ""), data: { topic: topic.id },
      on: { click: () => actions.startSession("conversation", topic.id) },
    }, [el("span", { class: "card-title", text: first }), el("span", { class: "card-body", text: second })]);
  }));
  return el("section", { class: "screen topics", id: "screen-topics" }, [
    el("h1", { text: t("chooseTopic") }),
    ...cards,
    grid,
  ]);
}
