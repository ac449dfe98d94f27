// The learner's profile (`profile`): the CEFR level with re-evaluation, 學習總覽 (progress
// notes), 需要加強 (the three weak-point dimensions, each pattern disclosing its wrong and
// right examples), the learning goal, and the tutor's speed (replay.js). Offline, the last
// profile read, marked stale.

import { el } from "../dom.js";
import { t } from "../i18n.js";
import { ISSUE_TYPES } from "./review.js";
import { speedControl } from "./replay.js";

/** `view`: { profile (`profile`'s answer), playbackRate }; `actions`: { evaluate(), setGoal(text), setRate(rate) }. */
export function renderProfile(view, actions) {
  const answer = view.profile;
  // The speed is the daemon's, not the backend's: it is set even while the profile loads.
  const speed = speedControl(view.playbackRate ?? 1, actions.setRate);
  if (!answer) return el("section", { class: "screen profile", id: "screen-profile" }, [el("p", { class: "muted", text: t("loading") }), speed]);
  const profile = answer.profile;
  const data = profile.profile_data ?? {};
  const weak = data.weak_points ?? {};
  const goal = el("input", { id: "goal-input", attrs: { type: "text", maxlength: 500, placeholder: t("goalPlaceholder") } });
  goal.value = profile.learning_goal ?? "";
  return el("section", { class: "screen profile", id: "screen-profile" }, [
    el("h1", { text: t("profileTitle") }),
    answer.stale ? el("div", { class: "banner offline", id: "profile-stale", text: t("stale") }) : null,
    el("div", { class: "level-card" }, [
      el("span", { class: "label", text: t("level") }),
      el("span", { class: "cefr", id: "cefr", text: profile.level ?? "—" }),
      el("button", { class: "small", id: "evaluate", text: t("reevaluate"), on: { click: () => actions.evaluate() } }),
    ]),
    // In view without scrolling on the 7" screen: a learner who cannot follow looks for it first.
    speed,
    el("h2", { text: t("learningOverview") }),
    el("p", { class: "progress-notes", id: "progress-notes", text: data.progress_notes || "—" }),
    el("h2", { text: t("needsWork") }),
    el("div", { class: "weak-points", id: "weak-points" }, ISSUE_TYPES.map((dimension) =>
      el("div", { class: `dimension mark-${dimension}`, data: { dimension } }, [
        el("h3", {}, [el("span", { class: `issue issue-${dimension}`, text: t(dimension) })]),
        // A dimension without patterns says so: an empty card read as a screen that failed.
        (weak[dimension] ?? []).length === 0 ? el("p", { class: "muted nothing", text: t("nothingToWorkOn") }) : null,
        ...(weak[dimension] ?? []).map((pattern) => el("details", { class: "pattern" }, [
          el("summary", { text: pattern.pattern }),
          el("ul", {}, (pattern.examples ?? []).map((example) => el("li", { class: "example" }, [
            el("del", { class: "wrong", text: example.wrong }),
            el("span", { class: "correct", text: example.correct }),
          ]))),
        ])),
      ]))),
    el("h2", { text: t("learningGoal") }),
    el("form", { class: "goal", on: { submit: (event) => { event.preventDefault(); actions.setGoal(goal.value.trim()); } } }, [
      goal, el("button", { class: "small", text: t("setGoal"), attrs: { type: "submit" } }),
    ]),
  ]);
}
