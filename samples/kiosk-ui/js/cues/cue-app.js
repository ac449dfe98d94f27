// Cue practice (a daemon with backend.kind = chatterbox; seeds 000 and 002): the learner
// signs in with a mailed code, chooses the language, picks a cue card, answers it aloud,
// and reads the transcript and the evaluation; past answers are in the history and can be
// heard again. Everything comes from the daemon: `learner.get` and the cue commands' replies,
// then the `cue` topic's events, so a reload or a second client shows the truth.

import { el, replace } from "../dom.js";
import { language, setLanguage, t } from "../i18n.js";
import { levelBar } from "../screens/conversation.js";
import { renderSignIn } from "./signin.js";
import { renderCards } from "./cards.js";
import { renderAnswer } from "./answer.js";
import { renderHistory } from "./history.js";
import { answerAfter, isBusy, newAnswer } from "./answer-state.js";
import { Command, Event } from "../protocol.js";
import { pushToTalkButton } from "../push-to-talk.js";

export class CueApp {
  constructor(root, connection) {
    this.root = root;
    this.connection = connection;
    this.learner = null;           // learner.get's answer
    this.signIn = { step: "email", email: "", reason: null, sent: false };
    this.cards = null;             // cues.get's answer
    this.cardsLanguage = null;     // the language those cards were asked in
    this.cardsAsked = null;        // the latest cues.get on its way: { ticket, language }
    this.cue = null;               // the card being answered
    this.answer = null;            // {cueId, state, answerId, recordingId, steps, transcript, evaluation, failed}
    this.history = null;           // cue.history's answer
    this.viewing = null;           // a recording of the history, shown whole
    this.tab = "cards";            // cards | history
    this.notices = [];
    this.level = null;
    this.speaking = false;
    this.handsFree = false;
    this.holding = false;
    this.nextId = 1;
    this.emailInput = el("input", { id: "email", attrs: { type: "email", maxlength: 254, autocomplete: "off", inputmode: "email" } });
    this.codeInput = el("input", { id: "code", attrs: { type: "text", maxlength: 12, autocomplete: "off", inputmode: "numeric" } });
    this.talkButton = pushToTalkButton("cue-talk", { hold: () => this.holdToTalk(), release: () => this.releaseTalk() });
  }

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

  notice(kind, key, detail = null, action = null) {
    this.notices.push({ kind, key, detail, action, id: this.nextId++ });
    if (this.notices.length > 3) this.notices.shift();
  }

  dismiss(id) {
    this.notices = this.notices.filter((n) => n.id !== id);
    this.render();
  }

  // MARK: sign-in and language

  async requestCode() {
    const email = this.emailInput.value.trim();
    if (!email) return;
    this.signIn.email = email;
    if (await this.act(Command.SignInRequestCode, { email })) {
      this.signIn.step = "code";
      this.notices = [];
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
    this.notices = [];
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
    this.notices = [];
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

  play(recordingId) { return this.act(Command.CuePlay, { recording_id: recordingId }); }

  async askAgain(recordingId) {
    if (this.answer?.recordingId === recordingId) this.answer = { ...this.answer, failed: null };
    await this.act(Command.CueResults, { recording_id: recordingId });
    this.render();
  }

  // MARK: events

  apply(event) {
    const data = event.data ?? {};
    // The answer's walk is answer-state.js's; what the page does besides is here.
    const answer = answerAfter(this.answer, event);
    const changed = answer !== this.answer;
    this.answer = answer;
    switch (event.event) {
      case Event.SignInChanged:
        this.learner = data.learner;
        // The language changed (here or from another client): the cards shown are the old one's.
        if (this.cards && data.learner.signed_in && data.learner.profile_id && data.learner.language !== this.cardsLanguage
            && this.cardsAsked?.language !== data.learner.language) this.loadCards(false);
        if (!data.learner.signed_in && data.reason) this.notice("warning", "signInAgain");
        break;
      case Event.Level:
        this.level = data.rms_dbfs;
        return this.renderLevel();
      case Event.SpeechStarted: this.speaking = true; return this.renderLevel();
      case Event.SpeechStopped: this.speaking = false; return this.renderLevel();
      case Event.CueDiscarded:
        if (data.reason === "no_speech") this.notice("warning", "cueNoSpeech");
        else if (data.reason === "device_error") this.notice("error", "deviceError", data.message);
        if (this.handsFree && data.reason === "no_speech" && this.cue) this.setHandsFree(true);
        break;
      case Event.CueSpoolFailed: this.notice("error", "cueNotKept", data.message); break;
      case Event.CueUploadFailed:
        this.notice("error", data.reason ? `reason_${data.reason}` : "cueUploadFailed", data.reason ? null : data.error);
        break;
      case Event.CueUploaded:
        if (this.handsFree) this.handsFree = false;
        break;
      default:
        if (!changed) return;
    }
    if (this.holding) { this.dressTalk(); return; }
    this.render();
  }

  renderLevel() {
    const bar = document.getElementById("level");
    if (bar) bar.replaceWith(levelBar(this));
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
        signedIn ? el("button", { class: "lang", id: "signout", text: t("signOut"), on: { click: () => this.signOut() } }) : null,
        el("button", { class: "lang", id: "language", text: t("language"), on: { click: () => this.toggleLanguage() } }),
      ]),
    ]);
    let screen;
    if (!this.learner) screen = el("section", { class: "screen waiting", id: "screen-waiting" }, [el("div", { class: "spinner" }), el("p", { text: t("loading") })]);
    else if (!signedIn) screen = renderSignIn(this);
    else if (this.cue) screen = renderAnswer(this);
    else if (this.tab === "history") screen = renderHistory(this);
    else screen = renderCards(this);
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
