// One stranger after another: the daemon's visit (topic `visit`) on the page. Over whatever
// the app shows: the attract screen while nobody uses the kiosk (what it offers, in both
// languages, a touch to start; never anything of a learner), "Still there?" with its
// countdown when the daemon warns of idleness, the "I'm done" control each app's bar holds
// during a visit (``doneControl``), and a goodbye while the visit's end is delivered. When the daemon says the visit
// ended, the page empties the browser's storage and loads itself again: nothing of the last
// learner survives in the page's memory either.

import { el, replace } from "./dom.js";
import { Command, Event } from "./protocol.js";

// The attract screen and the goodbye speak both languages at once: the next learner has not
// chosen one yet.
const BOTH = {
  attractTitle: ["英語口說練習", "Speaking practice"],
  cueTitle: ["口說卡片練習", "Speaking cards"],
  offerConversation: ["和 AI 老師用英語聊天，說完會有批改和總結", "Talk with an AI tutor; get marks, corrections and a summary"],
  offerCues: ["看卡片、用說的回答，得到逐字稿和評量", "Answer cards aloud; get a transcript and an evaluation"],
  touchToStart: ["點一下開始", "Touch to start"],
  privacy: ["結束或離開後，你的對話和登入都會清除", "When you finish or walk away, your conversation and sign-in are cleared"],
  stillThere: ["還在嗎？", "Still there?"],
  endingIn: ["秒後結束並清除", "seconds until this visit ends and is cleared"],
  imHere: ["我還在", "I'm still here"],
  done: ["我說完了", "I'm done"],
  confirmDone: ["結束並清除你的對話？", "End and clear your visit?"],
  yesEnd: ["結束", "End"],
  keepGoing: ["繼續練習", "Keep practising"],
  goodbye: ["再見！正在清除…", "Goodbye! Clearing your visit…"],
};

function both(key, options = {}) {
  const [zh, en] = BOTH[key];
  return el(options.tag ?? "span", { class: `both ${options.class ?? ""}`.trim(), id: options.id },
            [el("span", { class: "zh", attrs: { lang: "zh-TW" }, text: zh }), el("span", { class: "en", attrs: { lang: "en" }, text: en })]);
}

export class VisitLayer {
  /** `restart()` loads the page again (the app knows its bridge's address and token). */
  constructor(layer, connection, { restart }) {
    this.layer = layer;
    this.connection = connection;
    this.restart = restart;
    this.visit = null;        // the daemon's VisitState, or null before it is known (an older daemon: no layer)
    this.kind = null;         // "talkco" | "chatterbox"
    this.linked = false;
    this.confirming = false;
    this.leftS = null;        // the warning's countdown
    this.countdown = null;
    this.lastTouch = 0;
    // Any touch or key during a visit tells the daemon the learner is there (one a few
    // seconds at most: the idle clock counts in tens of seconds).
    for (const type of ["pointerdown", "keydown"]) {
      document.addEventListener(type, () => this.touched(), { capture: true, passive: true });
    }
  }

  /** The link opened (with the daemon's status) or closed. */
  linkChanged(open, status = null) {
    this.linked = open;
    if (status?.visit) this.visit = status.visit;
    if (status?.backend?.kind) this.kind = status.backend.kind;
    this.render();
  }

  /** Every event the page receives; the visit's own change the layer. */
  apply(event) {
    const data = event.data ?? {};
    switch (event.event) {
      case Event.DaemonSnapshot: {
        if (!data.visit) break;
        // A visit this page saw that the daemon no longer has (it restarted, and ended it at
        // its start; or it ended while the page was away): forgotten here too.
        const was = this.visit?.phase;
        const missed = was && was !== "none" && (data.visit.phase === "none" || data.visit.visit_id !== this.visit.visit_id);
        this.visit = data.visit;
        if (missed) this.forgetEverything(); else this.render();
        break;
      }
      case Event.VisitStarted:
      case Event.VisitResumed:
        this.visit = data.visit;
        this.render();
        break;
      case Event.IdleWarning:
        this.visit = { ...(this.visit ?? {}), phase: "warning", seconds_left: data.seconds_left };
        this.render();
        break;
      case Event.VisitEnded:
        this.visit = { ...(this.visit ?? {}), phase: "none" };
        this.forgetEverything();
        break;
    }
  }

  touched() {
    const phase = this.visit?.phase;
    if (!this.linked || (phase !== "active" && phase !== "warning")) return;
    const now = Date.now();
    if (phase === "active" && now - this.lastTouch < 5000) return;
    this.lastTouch = now;
    this.act(Command.VisitTouch);
  }

  async act(command) {
    const answer = await this.connection.act(command, {}, (error) => console.warn(error));
    if (answer && answer.phase) { this.visit = answer; this.render(); }
    return answer;
  }

  /** The browser keeps nothing of the visit: its storage emptied, then the page loaded
   *  anew (its memory gone), which opens on the attract screen. */
  async forgetEverything() {
    this.render();
    try { localStorage.clear(); sessionStorage.clear(); } catch (error) { console.warn(error); }
    const emptied = (async () => {
      if (globalThis.caches) for (const name of await caches.keys()) await caches.delete(name);
      if (globalThis.indexedDB?.databases) for (const db of await indexedDB.databases()) indexedDB.deleteDatabase(db.name);
    })().catch((error) => console.warn(error));
    // A browser whose storage is off (cog as the launcher runs it) may never answer: the
    // page loads anew regardless, its memory being what matters most.
    await Promise.race([emptied, new Promise((resolve) => setTimeout(resolve, 1000))]);
    this.restart();
  }

  render() {
    clearInterval(this.countdown);
    this.countdown = null;
    const phase = this.visit?.phase;
    document.body.dataset.visit = phase ?? "unknown";
    if (!this.linked || !phase) return replace(this.layer);
    if (phase === "none") return replace(this.layer, this.attract());
    if (phase === "ending") return replace(this.layer, el("div", { class: "visit-cover", id: "visit-goodbye" }, [both("goodbye", { tag: "p", class: "big-text" })]));
    const parts = [];
    if (this.confirming && phase === "active") parts.push(this.confirm());
    if (phase === "warning") parts.push(this.warning());
    replace(this.layer, ...parts);
  }

  /** The "I'm done" control each app puts in its bar (shown during a visit only, by the
   *  body's `data-visit`): it asks before the visit ends. */
  doneControl() {
    return el("button", { class: "visit-done lang", id: "visit-done", on: { click: () => { this.confirming = true; this.render(); } } }, [both("done")]);
  }

  attract() {
    this.confirming = false;
    const cues = this.kind === "chatterbox";
    return el("div", { class: "visit-cover attract", id: "attract", attrs: { role: "button", tabindex: 0 },
                       on: { click: () => this.act(Command.VisitTouch), keydown: (e) => { if (e.key === "Enter") this.act(Command.VisitTouch); } } }, [
      both(cues ? "cueTitle" : "attractTitle", { tag: "h1" }),
      el("div", { class: "offers" }, [both(cues ? "offerCues" : "offerConversation", { tag: "p", class: "offer", id: cues ? "offer-cues" : "offer-conversation" })]),
      el("div", { class: "start-button", id: "attract-start" }, [both("touchToStart")]),
      both("privacy", { tag: "p", class: "privacy" }),
    ]);
  }

  confirm() {
    return el("div", { class: "visit-cover dim", id: "visit-confirm" }, [
      el("div", { class: "visit-card" }, [
        both("confirmDone", { tag: "p", class: "big-text" }),
        el("div", { class: "row" }, [
          el("button", { id: "visit-confirm-end", class: "danger", on: { click: () => { this.confirming = false; this.act(Command.VisitEnd); } } }, [both("yesEnd")]),
          el("button", { id: "visit-confirm-cancel", class: "secondary", on: { click: () => { this.confirming = false; this.render(); } } }, [both("keepGoing")]),
        ]),
      ]),
    ]);
  }

  warning() {
    this.leftS = Math.max(0, Math.round(this.visit?.seconds_left ?? 0));
    const seconds = el("span", { class: "countdown", id: "visit-countdown", text: String(this.leftS) });
    this.countdown = setInterval(() => {
      this.leftS = Math.max(0, this.leftS - 1);
      seconds.textContent = String(this.leftS);
    }, 1000);
    return el("div", { class: "visit-cover dim", id: "visit-warning", attrs: { role: "alertdialog" } }, [
      el("div", { class: "visit-card" }, [
        both("stillThere", { tag: "h2" }),
        el("p", { class: "big-text" }, [seconds, " ", both("endingIn")]),
        el("button", { class: "huge", id: "visit-here", on: { click: () => this.act(Command.VisitTouch) } }, [both("imHere")]),
      ]),
    ]);
  }
}
