// Hearing the tutor again (issue 69): "again" and "slower" (a turtle) on the tutor's last
// line (`reply.replay`, played from the daemon's memory at the same pitch), "hear me" on the
// learner's last spoken line (`turn.replay`: the turn as it was sent), and the rate control
// of the profile screen (`playback.rate`: every reply of the visit at that rate).

import { el } from "../dom.js";
import { t } from "../i18n.js";
import { Command } from "../protocol.js";

/** The rates a learner chooses from: the tutor at its own speed, and three slower. */
export const RATES = [1, 0.85, 0.75, 0.6];

/** "Slower" is a clear step below what the learner hears now: 0.75 from the normal speed,
 *  then 0.6, then 0.5 (the daemon's floor). */
export function slowerRate(rate) {
  if (rate > 0.75) return 0.75;
  if (rate > 0.6) return 0.6;
  return 0.5;
}

/** A rate as the buttons show it: "0.75×". */
export function rateLabel(rate) {
  return `${rate === 1 ? "1.0" : String(rate)}×`;
}

/** The buttons under the tutor's last line; `view`: { playbackRate, replay, canReplay };
 *  `actions`: { act(command, args) }. */
export function replayButtons(view, actions) {
  const disabled = !view.canReplay;
  return el("div", { class: "replay", id: "replay" }, [
    el("button", { class: "small secondary", id: "replay-again", text: `↻ ${t("replayAgain")}`, attrs: { disabled, "aria-label": t("replayAgain") },
      on: { click: () => actions.act(Command.ReplyReplay, {}) } }),
    el("button", { class: "small secondary", id: "replay-slower", text: `🐢 ${t("replaySlower")}`, attrs: { disabled, "aria-label": t("replaySlower") },
      data: { rate: String(slowerRate(view.playbackRate)) },
      on: { click: () => actions.act(Command.ReplyReplay, { rate: slowerRate(view.playbackRate) }) } }),
    view.replay && !view.replay.turnId ? el("span", { class: "replaying muted", id: "replaying", text: `${t("replaying")} ${rateLabel(view.replay.rate)}` }) : null,
  ]);
}

/** "Hear me" under the learner's last spoken line; `view`: { turnId, replay, canReplay }. */
export function hearMeButton(view, actions) {
  return el("div", { class: "replay", id: "hear-me-row" }, [
    el("button", { class: "small secondary", id: "hear-me", text: `🔊 ${t("hearMe")}`, attrs: { disabled: !view.canReplay, "aria-label": t("hearMe") },
      data: { turn: view.turnId }, on: { click: () => actions.act(Command.TurnReplay, { turn_id: view.turnId }) } }),
    view.replay?.turnId === view.turnId ? el("span", { class: "replaying muted", id: "hearing-me", text: t("replaying") }) : null,
  ]);
}

/** The profile screen's rate control: one button a rate, the one in force pressed. */
export function speedControl(rate, setRate) {
  return el("div", { class: "speed", id: "speed" }, [
    el("h2", { text: t("tutorSpeed") }),
    el("p", { class: "muted", text: t("tutorSpeedHelp") }),
    el("div", { class: "row speed-rates", attrs: { role: "group", "aria-label": t("tutorSpeed") } }, RATES.map((choice) =>
      el("button", {
        class: "small" + (choice === rate ? " active" : " secondary"), id: `rate-${String(choice).replace(".", "_")}`,
        text: choice === 1 ? `${rateLabel(choice)} ${t("rateNormal")}` : rateLabel(choice),
        data: { rate: String(choice) }, attrs: { "aria-pressed": String(choice === rate) }, on: { click: () => setRate(choice) },
      }))),
  ]);
}
