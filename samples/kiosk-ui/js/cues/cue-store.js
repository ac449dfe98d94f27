// Where the cue page keeps what it knows of the daemon: the state of cue-state.js, changed
// only by its pure functions (an event through `reduce`, the page's own moves through
// `update`). Beside it the page keeps what only it decides (the card open, the tab, the
// sign-in step, the requests on their way): cue-app.js.

import { initialCueState, reduce } from "./cue-state.js";

export class CueStore {
  constructor() {
    this.state = initialCueState();
  }

  /** Applies one event of the daemon: what changed, and what the page must do. */
  apply(event) {
    const { state, changed, effects } = reduce(this.state, event);
    this.state = state;
    return { changed, effects };
  }

  /** A move of the page's own: `change` maps the state to the next. */
  update(change) {
    this.state = change(this.state);
  }
}
