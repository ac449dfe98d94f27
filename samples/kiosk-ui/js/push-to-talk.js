// The push-to-talk button, the same for a conversation and for a cue answer: pressed (a
// finger or a mouse: pointer events), it calls `hold`; let go anywhere on the page, or taken
// away by the browser (pointercancel: a palm, a gesture), it calls `release`. The page never
// scrolls or selects under the held finger. One element for the whole run, so that a screen
// drawn again while the finger is down keeps it.

import { el } from "./dom.js";

export function pushToTalkButton(id, { hold, release }) {
  const button = el("button", { id, on: { pointerdown: (event) => { event.preventDefault(); hold(); } } });
  for (const name of ["pointerup", "pointercancel"]) window.addEventListener(name, () => release());
  return button;
}
