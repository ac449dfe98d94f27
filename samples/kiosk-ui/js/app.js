// The kiosk's learner UI: one page, the screens of TalkCo's iOS client (seed 001), driven
// by practiced over its control socket through the bridge. All state comes from the daemon
// (its snapshot after every (re)connection, then its events), so a page reloaded, a daemon
// restarted or a second client driving the session all show the truth.

import { DaemonConnection } from "./connection.js";
import { el, replace } from "./dom.js";
import { setLanguage, language, t } from "./i18n.js";
import { Store } from "./store.js";
import { renderTopics } from "./screens/topics.js";
import { renderConversation, levelBar, dressTalkButton } from "./screens/conversation.js";
import { renderReview } from "./screens/review.js";
import { renderSummary } from "./screens/summary.js";
import { renderProfile } from "./screens/profile.js";
import { CueApp } from "./cues/cue-app.js";
import { Command, Topic } from "./protocol.js";
import { pushToTalkButton } from "./push-to-talk.js";
import { VisitLayer } from "./visit.js";

// `level` is not among them: following it keeps the daemon's microphone open, so the page
// follows it only through `level.watch`, while a screen shows the level (``watchLevel``).
const TOPICS = [Topic.session, Topic.playback, Topic.speech, Topic.device, Topic.cue, Topic.visit];

class App {
  constructor(root, { url, token, port }, visitRoot) {
    this.root = root;
    this.store = new Store();
    this.sayInput = el("input", { id: "say-input", attrs: { type: "text", maxlength: 4000, autocomplete: "off", placeholder: t("typeHere") } });
    this.holding = false;
    this.talkButton = pushToTalkButton("talk", { hold: () => this.holdToTalk(), release: () => this.releaseTalk() });
    this.connection = new DaemonConnection(url, { topics: TOPICS, token });
    // The visit's layer over every screen (visit.js); it loads the page anew, with the same
    // bridge, when a visit ends.
    this.visit = new VisitLayer(visitRoot, this.connection, { restart: () => reopen(token, port) });
    window.practicedVisit = this.visit;  // for the browser tests
    this.connection.on("event", (event) => {
      this.visit.apply(event);
      if (this.cues) this.cues.apply(event); else this.store.apply(event);
    });
    this.connection.on("state", (link) => this.linkChanged(link));
    this.store.subscribe((what) => this.changed(what));
    // A screen that changes size (a rotated panel, another resolution) still shows the
    // newest line of the conversation.
    window.addEventListener("resize", () => this.scrollToNewest());
    window.practicedKiosk = this;  // for the browser tests: the store and the messages seen
    this.messages = [];
    this.connection.on("message", (message) => { this.messages.push(message); if (this.messages.length > 5000) this.messages.shift(); });
  }

  start() {
    this.render();
    this.connection.connect();
  }

  linkChanged(link) {
    const wasOpen = this.store.link.state === "open";
    this.store.link = { state: link.state, retryInMs: link.detail?.retryInMs ?? null, everOpen: this.store.link.everOpen || link.state === "open" };
    if (link.state === "open") {
      this.levelWatched = undefined;  // a new connection watches nothing yet
      this.chooseApp();
    } else {
      this.visit.linkChanged(false);
    }
    if (wasOpen !== (link.state === "open")) this.render();
    else this.renderLink();
  }

  /** Which backend the daemon speaks decides the screens: TalkCo's conversation, or
   *  Chatterbox's cue practice (``CueApp``), which then renders the page. */
  async chooseApp() {
    const status = await this.act(Command.Status);
    this.visit.linkChanged(true, status);
    if (status?.backend?.kind === "chatterbox") {
      this.watchLevel(true);  // the cue screens show the level throughout
      this.cues = this.cues ?? new CueApp(this.root, this.connection, this.visit);
      window.practicedCues = this.cues;  // for the browser tests
      await this.cues.start();
      return;
    }
    this.loadHome();
  }

  /** Topics and profile for the home screen (the daemon answers stale copies offline). */
  async loadHome() {
    // A refusal keeps what was shown before.
    this.store.topics = (await this.act(Command.Topics)) ?? this.store.topics;
    this.store.profile = (await this.act(Command.Profile, { action: "get" })) ?? this.store.profile;
    this.render();
  }

  /** The microphone's level is watched only while a screen shows it: watching keeps the
   *  microphone open and streams 15 level events a second (audio.level_interval_ms) through the bridge and the
   *  browser, which on the home screen cost the whole kiosk its idle CPU for nothing. */
  watchLevel(on) {
    if (this.store.link.state !== "open" || this.levelWatched === on) return;
    this.levelWatched = on;
    this.act(Command.LevelWatch, { enabled: on });
  }

  changed(what) {
    if (what === "level") {
      const bar = document.getElementById("level");
      if (bar) bar.replaceWith(levelBar(this.store));
      return;
    }
    if (what === "stage" && this.store.handsFree && this.store.session.stage === "ready") this.act(Command.Listen);
    if (this.holding) {
      // Nothing under a finger that holds the button is replaced (a touch whose element
      // leaves the page is cancelled, and its release would never come): the page is
      // rebuilt when the finger lets go.
      this.renderPending = true;
      dressTalkButton(this.talkButton, this.store);
      return;
    }
    this.render();
  }

  failed(error) {
    // Told to the learner below (or by the link banner): a warning in the console, not an
    // error (the browser suite fails on any console error).
    console.warn(error);
    if (this.connection.state !== "open") return;  // the link banner says it already
    this.store.notice("error", "actionFailed", error.detail ?? error.message);
  }

  /** Sends a command; a refusal is shown, never swallowed. */
  act(command, args = {}) {
    return this.connection.act(command, args, (error) => this.failed(error));
  }

  startSession(mode, topicId) {
    this.store.startHere(topicId);
    this.act(Command.SessionStart, { mode, topic_id: topicId });
  }

  holdToTalk() {
    if (this.holding) return;
    this.holding = true;
    this.act(Command.TurnStart);
  }

  releaseTalk() {
    if (!this.holding) return;
    this.holding = false;
    this.act(Command.TurnStop);
    if (this.renderPending) {
      this.renderPending = false;
      this.render();
    }
  }

  setHandsFree(on) {
    this.store.handsFree = on;
    const stage = this.store.session.stage;
    if (on && stage === "ready") this.act(Command.Listen);
    if (!on && stage === "listening") this.act(Command.TurnCancel);
    this.render();
  }

  async say() {
    const text = this.sayInput.value.trim();
    if (!text) return;
    if (await this.act(Command.Say, { text })) this.sayInput.value = "";
  }

  async askCorrection(segmentId, message) {
    const correction = await this.act(Command.CorrectionAsk, { segment_id: segmentId, message });
    if (correction) this.store.addCorrection(correction);
    return Boolean(correction);
  }

  async evaluate() {
    const answer = await this.act(Command.Profile, { action: "evaluate" });
    if (answer) { this.store.profile = answer; this.render(); }
  }

  async setGoal(goal) {
    const answer = await this.act(Command.Profile, { action: "learning_goal", learning_goal: goal || null });
    if (answer) { this.store.profile = answer; this.render(); }
  }

  showTab(tab) {
    this.store.showTab(tab);
    if (tab === "profile") this.act(Command.Profile, { action: "get" }).then((answer) => { if (answer) { this.store.profile = answer; this.render(); } });
    this.render();
  }

  toggleLanguage() {
    setLanguage(language() === "en" ? "zh-TW" : "en");
    this.sayInput.placeholder = t("typeHere");
    this.render();
  }

  renderLink() {
    const link = this.store.link;
    const banner = document.getElementById("link");
    if (!banner) return;
    banner.className = `link link-${link.state}`;
    banner.dataset.state = link.state;
    banner.textContent = link.state === "open" ? "" : (link.everOpen ? t("daemonGone") : t("waitingForDaemon"));
  }

  render() {
    if (this.cues) {
      this.cues.render();
      return this.renderLink();
    }
    const store = this.store;
    const screen = store.link.state === "open" || store.link.everOpen ? store.screen : "waiting";
    const idle = store.session.stage === "idle";
    const header = el("header", { class: "app-bar" }, [
      el("span", { class: "app-title", text: t("appTitle") }),
      el("span", { class: "bar-actions" }, [
        this.visit.doneControl(),
        el("button", { class: "lang", id: "language", text: t("language"), on: { click: () => this.toggleLanguage() } }),
      ]),
    ]);
    const tabs = idle ? el("nav", { class: "tabs" }, [
      el("button", { class: "tab" + (store.tab === "practice" ? " active" : ""), id: "tab-practice", text: t("tabPractice"), on: { click: () => this.showTab("practice") } }),
      el("button", { class: "tab" + (store.tab === "profile" ? " active" : ""), id: "tab-profile", text: t("tabProfile"), on: { click: () => this.showTab("profile") } }),
    ]) : null;
    const screens = {
      waiting: () => el("section", { class: "screen waiting", id: "screen-waiting" }, [el("div", { class: "spinner" }), el("p", { text: t("waitingForDaemon") })]),
      topics: () => renderTopics({ topics: store.topics, profile: store.profile }, { startSession: (mode, topicId) => this.startSession(mode, topicId) }),
      conversation: () => renderConversation(this.conversationView(), {
        act: (command, args) => this.act(command, args), dismiss: (id) => store.dismiss(id),
        setHandsFree: (on) => this.setHandsFree(on), say: () => this.say(),
      }),
      review: () => renderReview({ stage: store.session.stage, review: store.review, notices: store.notices }, {
        askCorrection: (segmentId, message) => this.askCorrection(segmentId, message), finish: () => this.act(Command.ReviewFinish),
      }),
      summary: () => renderSummary({ summary: store.summary?.summary ?? store.review?.summary ?? null, note: store.summary?.note ?? null },
                                   { close: () => this.act(Command.SessionClose) }),
      profile: () => renderProfile({ profile: store.profile, playbackRate: store.playbackRate },
                                   { evaluate: () => this.evaluate(), setGoal: (text) => this.setGoal(text), setRate: (rate) => this.act(Command.PlaybackRate, { rate }) }),
    };
    this.watchLevel(screen === "conversation");
    const main = el("main", { id: "screen", data: { screen } }, [screens[screen]()]);
    replace(this.root, header, el("div", { id: "link", attrs: { role: "status", "aria-live": "polite" } }), main, tabs);
    this.renderLink();
    this.scrollToNewest();
  }

  /** What the conversation screen shows: the store's state, the link, and the page's own
   *  push-to-talk button and typed-turn field (the same elements across renders). */
  conversationView() {
    const store = this.store;
    return {
      session: store.session, lines: store.lines, notices: store.notices, level: store.level, speaking: store.speaking,
      stillListening: store.stillListening, simpleHearing: store.state.hearing?.models === "failed", handsFree: store.handsFree, linked: store.link.state === "open", topics: store.topics,
      talkButton: this.talkButton, sayInput: this.sayInput, playbackRate: store.playbackRate, replay: store.replay,
    };
  }

  scrollToNewest() {
    const lines = document.getElementById("lines");
    if (lines) lines.scrollTop = lines.scrollHeight;
  }
}

/** The bridge's WebSocket address, and the token the launcher put in the page's fragment.
 *  The token leaves the page's address at once (it would otherwise stay in the browser's
 *  history and session) and travels only as the WebSocket's subprotocol, never in a URL. */
function bridge() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const token = fragment.get("token") ?? "";
  // A page cog reads from the launcher's folder (its kiosk: scheme) is told the bridge's
  // loopback port; a page the bridge served talks back to where it came from.
  const port = fragment.get("bridge_port") ?? "";
  const served = location.protocol === "http:" || location.protocol === "https:";
  const host = !served && /^[0-9]{1,5}$/.test(port) ? `127.0.0.1:${port}` : location.host;
  if (location.hash) history.replaceState(null, "", location.pathname + location.search);
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return { url: `${scheme}//${host}/websockify`, token, port };
}

/** The page loaded anew at the end of a visit: its memory goes, the bridge's token and port
 *  come back through the fragment as the launcher gave them (dropped from the address again
 *  at once, above). A new `fresh` in the query makes it a load of its own: WPE's reload()
 *  after the fragment was put back loaded the address without it (and so without the token). */
function reopen(token, port) {
  const fragment = new URLSearchParams();
  if (token) fragment.set("token", token);
  if (port) fragment.set("bridge_port", port);
  const query = new URLSearchParams(location.search);
  query.set("fresh", String(Date.now()));
  // (Not URLSearchParams.size: WPE 2.38 has none.)
  const kept = fragment.toString();
  location.replace(`${location.pathname}?${query}${kept ? `#${kept}` : ""}`);
}

const params = new URLSearchParams(location.search);
setLanguage(params.get("lang") ?? "zh-TW");
new App(document.getElementById("app"), bridge(), document.getElementById("visit")).start();
