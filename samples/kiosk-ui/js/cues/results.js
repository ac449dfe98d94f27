// A recording's results as the learner reads them: the transcript, then the evaluation
// whole (CEFR level, summary, strengths, what to improve, next steps, grammar mistakes with
// their corrections, unnatural phrases and words, the improved version). Every text from
// the backend goes in as text.

import { el } from "../dom.js";
import { t } from "../i18n.js";

function list(id, title, items, item) {
  if (!items?.length) return null;
  return el("section", { class: "result-part", id }, [el("h2", { text: title }), el("ul", { class: "result-list" }, items.map(item))]);
}

export function renderTranscript(status, text) {
  if (status === "ready") return el("section", { class: "result-part", id: "transcript" }, [el("h2", { text: t("transcript") }), el("p", { class: "said", text: text ?? "" })]);
  return el("div", { class: "progress", id: "transcript-waiting" }, [el("div", { class: "spinner" }), el("span", { text: t("transcribing") })]);
}

export function renderEvaluation(status, evaluation) {
  if (status !== "ready" || !evaluation) {
    return el("div", { class: "progress", id: "evaluation-waiting" }, [el("div", { class: "spinner" }), el("span", { text: t("evaluating") })]);
  }
  return el("div", { class: "evaluation", id: "evaluation" }, [
    el("div", { class: "level-card" }, [el("span", { class: "cefr", id: "cue-cefr", text: evaluation.cefr_level }), el("p", { class: "overall", id: "cue-summary", text: evaluation.summary })]),
    list("strengths", t("strengths"), evaluation.strengths, (text) => el("li", { text })),
    list("improvements", t("improvementAreas"), evaluation.improvement_areas, (text) => el("li", { text })),
    list("grammar-mistakes", t("grammarMistakes"), evaluation.grammar_mistakes, (item) => el("li", { class: "mark mark-grammar" }, [
      el("p", {}, [el("del", { class: "wrong", text: item.original }), el("span", { class: "correct", text: item.correction })]),
      el("p", { class: "explanation", text: item.explanation }),
    ])),
    list("unnatural-phrases", t("unnaturalPhrases"), evaluation.unnatural_phrases, (item) => el("li", { class: "mark mark-naturalness" }, [
      el("p", {}, [el("del", { class: "wrong", text: item.phrase }), el("span", { class: "correct", text: item.natural_replacement })]),
      el("p", { class: "explanation", text: item.explanation }),
    ])),
    list("unnatural-words", t("unnaturalWords"), evaluation.unnatural_words, (item) => el("li", { class: "mark mark-naturalness" }, [
      el("p", {}, [el("del", { class: "wrong", text: item.word }), el("span", { class: "correct", text: item.better_word })]),
      el("p", { class: "explanation", text: item.explanation }),
    ])),
    el("section", { class: "result-part", id: "improved" }, [el("h2", { text: t("improvedVersion") }), el("p", { class: "said", text: evaluation.improved_version })]),
    list("next-steps", t("nextSteps"), evaluation.recommended_next_steps, (text) => el("li", { text })),
  ]);
}
