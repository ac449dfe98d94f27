// Where the page keeps what it knows: the conversation's state (conversation-state.js, whose
// functions are pure), and beside it what only the page decides (the link's state, hands-free,
// the topics and profile it asked for). Screens read it and re-render when told what changed.

import { initialState, newConversation, reduce, screenOf, withCorrection, withNotice, withoutNotice } from "./conversation-state.js";

export class Store {
  constructor() {
    this.state = initialState();
    this.link = { state: "connecting", retryInMs: null, everOpen: false };
    this.handsFree = false;
    this.topics = null;
    this.profile = null;
    this.listeners = [];
  }

  subscribe(listener) { this.listeners.push(listener); }

  changed(what) { for (const listener of this.listeners) listener(what); }

  /** Applies one event of the daemon. */
  apply(event) {
    const { state, changed } = reduce(this.state, event);
    this.state = state;
    for (const what of changed) this.changed(what);
  }

  update(state, what) {
    this.state = state;
    this.changed(what);
  }

  // What the screens read.
  get session() { return this.state.session; }
  get lines() { return this.state.lines; }
  get notices() { return this.state.notices; }
  get level() { return this.state.level; }
  get speaking() { return this.state.speaking; }
  get stillListening() { return this.state.stillListening; }
  get review() { return this.state.review; }
  get reviewProgress() { return this.state.reviewProgress; }
  get summary() { return this.state.summary; }
  get tab() { return this.state.tab; }
  get playbackRate() { return this.state.playbackRate; }
  get replay() { return this.state.replay; }
  get screen() { return screenOf(this.state); }

  // What the page does.
  notice(kind, key, detail = null, turnId = null) { this.update(withNotice(this.state, kind, key, detail, turnId), "notices"); }
  dismiss(noticeId) { this.update(withoutNotice(this.state, noticeId), "notices"); }
  /** A session this page asked for, on `topicId`: what the last one said goes. */
  startHere(topicId) {
    const state = newConversation(this.state, true);
    this.state = { ...state, session: { ...state.session, topic_id: topicId } };
  }
  addCorrection(correction) { this.update(withCorrection(this.state, correction), "review"); }
  showTab(tab) { this.state = { ...this.state, tab }; }
}
