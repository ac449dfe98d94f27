// Cue practice (a daemon with backend.kind = chatterbox; seeds 000 and 002): the learner
// signs in with a mailed code, chooses the language, picks a cue card, answers it aloud,
// and reads the transcript and the evaluation; past answers are in the history and can be
// heard again. Everything comes from the daemon: `learner.get` and the cue commands' replies,
// then the `cue` topic's events, so a reload or a second client shows the truth. What the
// daemon says is kept in a CueStore (cue-state.js's pure functions); the page keeps what only
// it decides (the card open, the tab, the sign-in step, the requests on their way), and each
// screen is given what it shows and the actions it offers, never the page.

import { el, replace } from "../dom.js";
import { language, setLanguage, t } from "../i18n.js";
import { levelBar } from "../screens/conversation.js";
import { renderSignIn } from "./signin.js";
import { renderCards } from "./cards.js";
import { renderAnswer } from "./answer.js";
import { renderHistory } from "./history.js";
import { isBusy, newAnswer } from "./answer-state.js";
import { CueStore } from "./cue-store.js";
import { withNotice, withoutNotice } from "./cue-state.js";
import { Command, Event } from "../protocol.js";
import { pushToTalkButton } from "../push-to-talk.js";

export class CueApp {
  constructor(root, connection, visit) {
    this.root = root;
    this.connection = connection;
    this.visit = visit;            // the visit's layer (visit.js): its "I'm done" goes in the bar
    this.store = new CueStore();   // the learner, the answer, notices, level, hands-free
    this.signIn = { step: "email", email: "", reason: null, sent: false };
    this.cards = null;             // cues.get's answer
    this.cardsLanguage = null;     // the language those cards were asked in
    this.cardsAsked = null;        // the latest cues.get on its way: { ticket, language }
    this.cue = null;               // the card being answered
    this.history = null;           // cue.history's answer
    this.viewing = null;           // a recording of the history, shown whole
    this.tab = "cards";            // cards | history
    this.holding = false;
    this.emailInput = el("input", { id: "email", attrs: { type: "email", maxlength: 254, autocomplete: "off", inputmode: "email" } });
    this.codeInput = el("input", { id: "code", attrs: { type: "text", maxlength: 12, autocomplete: "off", inputmode: "numeric" } });
    this.talkButton = pushToTalkButton("cue-talk", { hold: () => this.holdToTalk(), release: () => this.releaseTalk() });
  }

  // The store's state, read and moved through its pure functions.
  get learner() { return this.store.state.learner; }
  set learner(learner) { this.store.update((state) => ({ ...state, learner })); }
  /** {cueId, state, answerId, recordingId, steps, transcript, evaluation, failed} */
  get answer() { return this.store.state.answer; }
  set answer(answer) { this.store.update((state) => ({ ...state, answer })); }
  get handsFree() { return this.store.state.handsFree; }
  set handsFree(handsFree) { this.store.update((state) => ({ ...state, handsFree })); }
  get notices() { return this.store.state.notices; }
  set notices(notices) { this.store.update((state) => ({ ...state, notices })); }

  async start() {
    await this.loadLearner();
  }

  async loadLearner() {
    const learner = await this.act(Command.LearnerGet);
    if (learner) this.learner = learner;
    if (this.learner?.signed_in && this.learner.profile_id) await this.loadCards(false);
    this.render();
  }

  /** Sends a command; a refusal is shown (by its reason when the backend gave one), never swallowed. */
  act(command, args = {}) {
    return this.connection.act(command, args, (error) => this.refused(error));
  }

  refused(error) {
    console.warn(error);  // told to the learner below
    if (error.code === "sign_in_required") {
      this.learner = { ...(this.learner ?? {}), signed_in: false };
      this.signIn.step = "email";
    } else {
      this.notice("error", error.reason ? `reason_${error.reason}` : "actionFailed", error.reason ? null : error.detail ?? error.message);
    }
    this.render();
  }

  notice(kind, key, detail = null) {
    this.store.update((state) => withNotice(state, kind, key, detail));
  }

  clearNotices() { this.notices = []; }

  dismiss(id) {
    this.store.update((state) => withoutNotice(state, id));
    this.render();
  }

  // MARK: sign-in and language

  async requestCode() {
    const email = this.emailInput.value.trim();
    if (!email) return;
    this.signIn.email = email;
    if (await this.act(Command.SignInRequestCode, { email })) {
      this.signIn.step = "code";
      this.clearNotices();
      this.render();
      this.codeInput.focus();
    }
  }

  async enterCode() {
    const code = this.codeInput.value.trim();
    if (!code) return;
    const learner = await this.act(Command.SignInCode, { email: this.signIn.email, code });
    if (!learner) return;
    this.codeInput.value = "";
    this.learner = learner;
    this.signIn = { step: "email", email: "", reason: null };
    this.clearNotices();
    await this.loadCards(false);
    this.render();
  }

  async signOut() {
    const learner = await this.act(Command.SignOut);
    if (learner) {
      this.learner = learner;
      this.cards = null;
      this.history = null;
      this.answer = null;
      this.cue = null;
      this.render();
    }
  }

  async chooseLanguage(code) {
    const learner = await this.act(Command.LearnerLanguage, { language: code });
    if (!learner) return;
    this.learner = learner;
    // The daemon's signin.changed may have asked for this language's cards already.
    if (this.cardsAsked?.language !== learner.language) await this.loadCards(false);
    this.render();
  }

  // MARK: cards and answers

  async loadCards(shuffle) {
    // Only the latest request's answer is shown: an older one may be the language just left.
    const asked = { ticket: (this.cardsAsked?.ticket ?? 0) + 1, language: this.learner?.language ?? null };
    this.cardsAsked = asked;
    const cards = await this.act(Command.CuesGet, shuffle ? { shuffle: true } : {});
    if (this.cardsAsked !== asked) return;
    this.cardsAsked = null;
    if (cards) {
      this.cards = cards;
      this.cardsLanguage = asked.language;
    }
    this.render();
  }

  open(card) {
    this.cue = card;
    this.answer = null;
    this.clearNotices();
    this.render();
  }

  home() {
    if (this.answer && ["recording", "listening"].includes(this.answer.state)) this.act(Command.CueCancel);
    this.cue = null;
    this.viewing = null;
    this.render();
  }

  async holdToTalk() {
    if (this.holding || !this.cue || this.handsFree) return;
    this.holding = true;
    this.answer = newAnswer(this.cue.cue_id, false);
    this.render();
    if (!(await this.act(Command.CueRecord, { cue_id: this.cue.cue_id }))) this.answer = null;
  }

  releaseTalk() {
    if (!this.holding) return;
    this.holding = false;
    this.act(Command.CueStop);
    this.render();
  }

  async setHandsFree(on) {
    this.handsFree = on;
    if (on && this.cue) {
      this.answer = newAnswer(this.cue.cue_id, true);
      if (!(await this.act(Command.CueRecord, { cue_id: this.cue.cue_id, hands_free: true }))) this.answer = null;
    } else if (!on && this.answer?.state === "listening") {
      await this.act(Command.CueCancel);
      this.answer = null;
    }
    this.render();
  }

  async showHistory() {
    this.tab = "history";
    this.cue = null;
    this.viewing = null;
    this.render();
    const history = await this.act(Command.CueHistory, { limit: 20 });
    if (history) this.history = history;
    this.render();
  }

  showCards() {
    this.tab = "cards";
    this.cue = null;
    this.viewing = null;
    this.render();
  }

  view(recording) {
    this.viewing = recording;
    this.render();
  }

  play(recordingId, rate) { return this.act(Command.CuePlay, rate ? { recording_id: recordingId, rate } : { recording_id: recordingId }); }

  async askAgain(recordingId) {
    if (this.answer?.recordingId === recordingId) this.answer = { ...this.answer, failed: null };
    await this.act(Command.CueResults, { recording_id: recordingId });
    this.render();
  }

  // MARK: events

  apply(event) {
    const { changed, effects } = this.store.apply(event);
    for (const effect of effects) {
      // The language changed (here or from another client): the cards shown are the old one's.
      if (effect.type === "language" && this.cards && effect.language !== this.cardsLanguage && this.cardsAsked?.language !== effect.language) {
        this.loadCards(false);
      }
      if (effect.type === "listenAgain" && this.cue) this.setHandsFree(true);
    }
    if (changed.length === 0) return;
    if (changed.length === 1 && changed[0] === "level") return this.renderLevel();
    if (this.holding) { this.dressTalk(); return; }
    this.render();
  }

  renderLevel() {
    const bar = document.getElementById("level");
    if (bar) bar.replaceWith(levelBar(this.store.state));
  }

  /** Whether an answer is on its way (saved, uploading, results coming): no new one yet. */
  get busy() { return isBusy(this.answer); }

  /** The push-to-talk button's look (the same element throughout: a held touch keeps it). */
  dressTalk() {
    const recording = this.answer?.state === "recording";
    this.talkButton.className = "talk" + (recording ? " recording" : "");
    this.talkButton.textContent = recording && !this.handsFree ? t("releaseToSend") : t("holdToAnswer");
    this.talkButton.disabled = this.handsFree || (this.busy && !this.holding);
    return this.talkButton;
  }

  toggleLanguage() {
    setLanguage(language() === "en" ? "zh-TW" : "en");
    this.render();
  }

  render() {
    if (this.holding) return this.dressTalk();
    const signedIn = this.learner?.signed_in;
    const header = el("header", { class: "app-bar" }, [
      el("span", { class: "app-title", text: t("cueAppTitle") }),
      signedIn ? el("span", { class: "learner", id: "learner", text: [this.learner.email, this.learner.language?.toUpperCase()].filter(Boolean).join(" · ") }) : null,
      el("span", { class: "bar-actions" }, [
        this.visit?.doneControl(),
        signedIn ? el("button", { class: "lang", id: "signout", text: t("signOut"), on: { click: () => this.signOut() } }) : null,
        el("button", { class: "lang", id: "language", text: t("language"), on: { click: () => this.toggleLanguage() } }),
      ]),
    ]);
    let screen;
    if (!this.learner) screen = el("section", { class: "screen waiting", id: "screen-waiting" }, [el("div", { class: "spinner" }), el("p", { text: t("loading") })]);
    else if (!signedIn) {
      screen = renderSignIn({ step: this.signIn.step, email: this.signIn.email, emailInput: this.emailInput, codeInput: this.codeInput }, {
        requestCode: () => this.requestCode(), enterCode: () => this.enterCode(),
        otherEmail: () => { this.signIn.step = "email"; this.render(); },
      });
    } else if (this.cue) {
      const { level, speaking } = this.store.state;
      screen = renderAnswer({ cue: this.cue, answer: this.answer, handsFree: this.handsFree, level, speaking, talkButton: this.dressTalk() }, {
        setHandsFree: (on) => this.setHandsFree(on), askAgain: (id) => this.askAgain(id), play: (id, rate) => this.play(id, rate), home: () => this.home(),
      });
    } else if (this.tab === "history") {
      screen = renderHistory({ history: this.history, viewing: this.viewing }, {
        view: (recording) => this.view(recording), askAgain: (id) => this.askAgain(id), play: (id) => this.play(id),
      });
    } else {
      screen = renderCards({ learner: this.learner, cards: this.cards, cardsLanguage: this.cardsLanguage }, {
        chooseLanguage: (code) => this.chooseLanguage(code), open: (card) => this.open(card), shuffle: () => this.loadCards(true),
      });
    }
    const tabs = signedIn && !this.cue ? el("nav", { class: "tabs" }, [
      el("button", { class: "tab" + (this.tab === "cards" ? " active" : ""), id: "tab-cards", text: t("tabCards"), on: { click: () => this.showCards() } }),
      el("button", { class: "tab" + (this.tab === "history" ? " active" : ""), id: "tab-history", text: t("tabHistory"), on: { click: () => this.showHistory() } }),
    ]) : null;
    const notices = el("div", { class: "notices", id: "notices" }, this.notices.map((item) =>
      el("div", { class: `notice ${item.kind}`, data: { notice: item.key }, attrs: { role: "status" } }, [
        el("span", { class: "notice-text", text: t(item.key) + (item.detail ? ` ${item.detail}` : "") }),
        el("button", { class: "dismiss", text: "×", attrs: { "aria-label": "dismiss" }, on: { click: () => this.dismiss(item.id) } }),
      ])));
    // Backend text (cards, transcripts, evaluations) is in the language practised: marked so.
    if (signedIn && this.learner.language) screen.lang = this.learner.language;
    const main = el("main", { id: "screen", data: { screen: screen.id } }, [notices, screen]);
    replace(this.root, header, el("div", { id: "link" }), main, tabs);
  }
}
