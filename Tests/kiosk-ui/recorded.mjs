// What the state tests share: the event streams recorded from the release daemon through the
// bridge (fixtures/), and a deep freeze, so that a function writing into its input throws
// (modules are strict). Not a test file itself: `node --test` runs only `*.test.mjs`.

import { readFileSync } from "node:fs";

/** The events of fixtures/`name`.json, in the order the page received them. */
export function recordedEvents(name) {
  return JSON.parse(readFileSync(new URL(`./fixtures/${name}.json`, import.meta.url), "utf8"));
}

/** `value`, and everything in it, frozen. */
export function deepFreeze(value) {
  if (value && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
