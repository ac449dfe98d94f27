// The cue cards: the current batch (`cues.get`), another batch on request (`shuffle`),
// the language practised (`learner.language`). A card's details are the backend's markdown,
// shown as text. Offline, the last batch kept is shown, marked stale. While the language is
// changing (the learner's is new, the cards are still the old language's) the cards are busy
// and cannot be tapped: an answer to a card in the language just left would be judged in the
// new one.

import { el } from "../dom.js";
import { t } from "../i18n.js";

/** `view`: { learner, cards, cardsLanguage } (the language the cards shown were asked in);
 *  `actions`: { chooseLanguage(code), open(card), shuffle() }. */
export function renderCards(view, actions) {
  const { cards, learner } = view;
  const languages = el("div", { class: "chips languages", id: "languages" }, (learner.languages ?? []).map((code) =>
    el("button", { class: "chip" + (code === learner.language ? " active" : ""), data: { language: code }, text: code.toUpperCase(),
      attrs: { "aria-pressed": String(code === learner.language) }, on: { click: () => actions.chooseLanguage(code) } })));
  const items = [];
  if (cards?.stale) items.push(el("div", { class: "banner offline", id: "cards-stale", text: t("offlineCards") }));
  if (!cards) items.push(el("p", { class: "muted", text: t("loading") }));
  const changing = Boolean(cards) && view.cardsLanguage !== (learner.language ?? null);
  const grid = el("div", { class: "topic-grid cue-grid", id: "cue-grid", attrs: { "aria-busy": String(changing) } }, (cards?.cues ?? []).map((card) =>
    el("button", { class: "card cue-card" + (cards.stale ? " stale" : ""), data: { cue: card.cue_id }, attrs: { disabled: changing },
      on: { click: () => actions.open(card) } }, [
      el("span", { class: "card-title", text: card.title }),
      card.details ? el("span", { class: "card-body cue-details", text: card.details }) : null,
    ])));
  return el("section", { class: "screen cards", id: "screen-cards" }, [
    el("div", { class: "cards-head" }, [el("h1", { text: t("chooseCard") }), languages]),
    ...items,
    grid,
    el("div", { class: "row" }, [el("button", { class: "secondary", id: "shuffle", text: t("otherCards"), on: { click: () => actions.shuffle() } })]),
  ]);
}
