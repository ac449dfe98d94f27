// The conversation (and weak-point review mode): the stage, what was said, every outcome
// the daemon reports as a notice of its own kind, the live input level, and the controls:
// a big push-to-talk button (held: `turn.start`, released: `turn.stop`), the hands-free
// toggle (`listen` whenever the session is ready; while it records, "done" sends
// `turn.stop`, and a pause the daemon waits through shows as still listening), stop
// (`playback.stop`: barge-in), a
// typed turn (`say`) and the end (結束對話 → review; 結束複習 → home). The tutor's last line
// carries "again" and "slower" (replay.js).

import { el } from "../dom.js";
import { language, t } from "../i18n.js";
import { Command } from "../protocol.js";
import { hearMeButton, replayButtons } from "./replay.js";

const STAGE_KEYS = {
  idle: "stageIdle", starting: "stageStarting", greeting: "stageGreeting", ready: "stageReady", listening: "stageListening",
  recording: "stageRecording", uploading: "stageUploading", replying: "stageReplying", ending: "stageEnding", failed: "stageFailed",
};

/** The input level as a bar from -60 dBFS (empty) to 0 (full); `view`: { level, speaking }. */
function levelBar(view) {
  const level = view.level ?? -90;
  const fill = Math.max(0, Math.min(100, ((level + 60) / 60) * 100));
  return el("div", { class: "level" + (view.speaking ? " speaking" : ""), id: "level", attrs: { role: "meter", "aria-valuenow": Math.round(level), "aria-valuemin": -60, "aria-valuemax": 0 } },
    [el("div", { class: "level-fill", attrs: { style: `width: ${fill.toFixed(1)}%` } })]);
}

function notice(actions, item) {
  const buttons = [];
  if (item.kind === "pending" && item.turnId) {
    buttons.push(el("button", { class: "small", text: t("retrySend"), data: { action: "spool-retry" }, on: { click: () => actions.act(Command.SpoolRetry, { turn_id: item.turnId }) } }));
    buttons.push(el("button", { class: "small secondary", text: t("discard"), data: { action: "spool-discard" }, on: { click: () => actions.act(Command.SpoolDiscard, { turn_id: item.turnId }) } }));
  }
  return el("div", { class: `notice ${item.kind}`, data: { notice: item.key }, attrs: { role: "status" } }, [
    el("span", { class: "notice-text", text: t(item.key) + (item.detail && item.kind === "error" ? ` ${item.detail}` : "") }),
    ...buttons,
    el("button", { class: "dismiss", text: "×", attrs: { "aria-label": "dismiss" }, on: { click: () => actions.dismiss(item.id) } }),
  ]);
}

/** What is practised: the topic's label in the UI's language, or weak-point review. */
function sessionTitle(view) {
  if (view.session.mode === "review") return t("reviewModeTitle");
  const topic = (view.topics?.topics ?? []).find((item) => item.id === view.session.topic_id);
  if (!topic) return view.session.topic_id ?? "";
  return (language() === "en" ? topic.label_en : topic.label_zh) || topic.label_en || topic.id;
}

/** The push-to-talk button's look for the stage (also while a finger holds it); `view`: { session, handsFree }. */
export function dressTalkButton(button, view) {
  const recording = view.session.stage === "recording";
  button.className = "talk" + (recording ? " recording" : "");
  button.textContent = recording && !view.handsFree ? t("releaseToSend") : t("holdToTalk");
  return button;
}

/** `view`: { session, lines, notices, level, speaking, stillListening, handsFree, linked, topics, simpleHearing,
 *  playbackRate, replay,
 *  and the page's own talkButton and sayInput elements, kept across renders }; `actions`:
 *  { act(command, args), dismiss(noticeId), setHandsFree(on), say() }. */
export function renderConversation(view, actions) {
  const stage = view.session.stage;
  const reviewMode = view.session.mode === "review";
  // While the daemon is away nothing can be asked of it: the controls wait for it.
  const linked = view.linked;
  const canTalk = linked && ["ready", "greeting", "replying", "listening", "recording"].includes(stage);
  const canStop = linked && (["greeting", "replying"].includes(stage) || Boolean(view.replay));
  const ready = linked && stage === "ready";
  // The daemon keeps the last reply that sounded: the tutor's last line is the one heard again.
  const lastTutor = view.lines.reduce((last, line, index) => (line.who === "tutor" ? index : last), -1);
  // The learner's last spoken turn (a typed one has no recording).
  const lastSpoken = view.lines.reduce((last, line, index) => (line.who === "you" && line.turnId ? index : last), -1);
  const canReplay = linked && ["ready", "listening"].includes(stage);
  const playing = (line, index) => view.replay && (line.turnId ? view.replay.turnId === line.turnId : index === lastTutor && !view.replay.turnId);
  const lines = el("ol", { class: "lines", id: "lines" }, view.lines.map((line, index) =>
    el("li", { class: `line ${line.who}` + (playing(line, index) ? " replaying" : ""), data: { who: line.who } }, [
      el("span", { class: "who", text: t(line.who) }),
      el("span", { class: "said", text: line.text }),
      index === lastTutor ? replayButtons({ playbackRate: view.playbackRate, replay: view.replay, canReplay }, actions) : null,
      index === lastSpoken ? hearMeButton({ turnId: line.turnId, replay: view.replay, canReplay }, actions) : null,
    ])));
  // The same button every time: a finger holding it keeps its target (a touch's events go
  // to the element it started on, and a new one would never hear the release).
  const talk = dressTalkButton(view.talkButton, view);
  talk.disabled = !canTalk || view.handsFree;
  const handsFree = el("label", { class: "toggle" }, [
    el("input", { id: "hands-free", attrs: { type: "checkbox", checked: view.handsFree }, on: { change: (event) => actions.setHandsFree(event.target.checked) } }),
    el("span", { text: t("handsFree") }),
  ]);
  // The speech models failed (the operator is told): hands-free turns end at the first
  // pause, so the learner is told once, quietly, how to finish.
  const hearingNote = view.handsFree && view.simpleHearing
    ? [el("p", { class: "hint", id: "hearing-note", text: t("hearingSimple") })] : [];
  const controls = stage === "failed"
    ? [el("button", { class: "primary", id: "home", text: t("done"), on: { click: () => actions.act(Command.SessionClose) } })]
    : [
      talk,
      // Hands-free, the learner may end the turn at once instead of waiting for the pause.
      ...(view.handsFree && stage === "recording"
        ? [el("button", { class: "primary", id: "done-speaking", text: t("doneSpeaking"), attrs: { disabled: !linked }, on: { click: () => actions.act(Command.TurnStop) } })]
        : []),
      el("div", { class: "row" }, [
        handsFree,
        ...hearingNote,
        el("button", { class: "secondary", id: "stop", text: t("stop"), attrs: { disabled: !canStop }, on: { click: () => actions.act(Command.PlaybackStop) } }),
        el("button", { class: "end", id: "end", text: reviewMode ? t("endReview") : t("endConversation"), attrs: { disabled: !ready }, on: { click: () => actions.act(Command.SessionEnd) } }),
      ]),
      el("form", { class: "say", id: "say", on: { submit: (event) => { event.preventDefault(); actions.say(); } } }, [
        view.sayInput,
        el("button", { class: "small", text: t("send"), attrs: { type: "submit", disabled: !ready } }),
      ]),
    ];
  return el("section", { class: "screen conversation", id: "screen-conversation", data: { stage, mode: view.session.mode ?? "" } }, [
    el("header", { class: "stage-bar" }, [
      el("span", { class: "session-title", id: "session-title", text: sessionTitle(view) }),
      el("span", { class: `stage stage-${stage}`, id: "stage",
        text: t(stage === "recording" && view.handsFree && view.stillListening ? "stageStillListening" : STAGE_KEYS[stage] ?? "stageIdle") }),
      levelBar(view),
    ]),
    el("div", { class: "notices", id: "notices" }, view.notices.map((item) => notice(actions, item))),
    lines,
    el("div", { class: "controls" }, controls),
  ]);
}

export { levelBar };
