// practiced/1's names, generated from the daemon's types by
// `practiced --print-protocol-module > samples/kiosk-ui/js/protocol.js`: do not edit.
// Each is the wire name, keyed by the name of its type in the daemon (Command.X, Event.X);
// docs/protocol/reference.md says what each carries.

export const PROTOCOL = "practiced/1";

/** The commands a client may send. */
export const Command = Object.freeze({
  Hello: "hello",
  Subscribe: "subscribe",
  Unsubscribe: "unsubscribe",
  Ping: "ping",
  Status: "status",
  Devices: "devices",
  Play: "play",
  PlaybackStop: "playback.stop",
  PlaybackRate: "playback.rate",
  VolumeGet: "volume.get",
  VolumeSet: "volume.set",
  LevelWatch: "level.watch",
  ConfigGet: "config.get",
  Metrics: "metrics",
  VisitTouch: "visit.touch",
  VisitEnd: "visit.end",
  SessionStart: "session.start",
  SessionEnd: "session.end",
  SessionClose: "session.close",
  SessionGet: "session.get",
  TurnStart: "turn.start",
  Listen: "listen",
  TurnStop: "turn.stop",
  TurnCancel: "turn.cancel",
  Say: "say",
  ReplyReplay: "reply.replay",
  TurnReplay: "turn.replay",
  ReviewGet: "review.get",
  CorrectionAsk: "correction.ask",
  ReviewFinish: "review.finish",
  SpoolList: "spool.list",
  SpoolRetry: "spool.retry",
  SpoolDiscard: "spool.discard",
  Topics: "topics",
  Profile: "profile",
  SignInRequestCode: "signin.request_code",
  SignInCode: "signin.code",
  SignInRequestLink: "signin.request_link",
  SignInLink: "signin.link",
  SignOut: "signout",
  LearnerGet: "learner.get",
  LearnerLanguage: "learner.language",
  CuesGet: "cues.get",
  CueGet: "cue.get",
  CueRecord: "cue.record",
  CueStop: "cue.stop",
  CueCancel: "cue.cancel",
  CueHistory: "cue.history",
  CueResults: "cue.results",
  CuePlay: "cue.play",
  CueDiscard: "cue.discard",
});

/** The events the daemon sends, by topic. */
export const Event = Object.freeze({
  DaemonSnapshot: "snapshot", // state
  SessionStage: "session.stage", // session
  SessionCreated: "session.created", // session
  SessionResumed: "session.resumed", // session
  SessionFailed: "session.failed", // session
  SessionEnded: "session.ended", // session
  SessionEndFailed: "session.end_failed", // session
  SessionCompleted: "session.completed", // session
  TurnStarted: "turn.started", // session
  TurnRecorded: "turn.recorded", // session
  TurnDiscarded: "turn.discarded", // session
  TurnSpooled: "turn.spooled", // session
  TurnSpoolFailed: "turn.spool_failed", // session
  TurnUploading: "turn.uploading", // session
  TurnUpload: "turn.upload", // session
  TurnAccepted: "turn.accepted", // session
  TurnRetrying: "turn.retrying", // session
  TurnPending: "turn.pending", // session
  TurnRejected: "turn.rejected", // session
  TurnFailed: "turn.failed", // session
  TurnUnanswered: "turn.unanswered", // session
  SpoolRecovered: "spool.recovered", // session
  SpoolDiscarded: "spool.discarded", // session
  SpoolItemSetAside: "spool.set_aside", // session
  Transcript: "transcript", // session
  ReplyText: "reply.text", // session
  ReplyAudioStarted: "reply.audio_started", // session
  ReplyRetrying: "reply.retrying", // session
  ReplyTiming: "reply.timing", // session
  ReplyMalformed: "reply.malformed", // session
  ReplyIncomplete: "reply.incomplete", // session
  ReplyWaiting: "reply.waiting", // session
  ReplyDrained: "reply.drained", // session
  ReplyFinished: "reply.finished", // session
  ReplyReplaying: "reply.replaying", // session
  ReplyReplayFinished: "reply.replay_finished", // session
  TurnReplaying: "turn.replaying", // session
  TurnReplayFinished: "turn.replay_finished", // session
  GreetingFailed: "greeting.failed", // session
  GreetingUnanswered: "greeting.unanswered", // session
  ReviewProgress: "review.progress", // session
  ReviewReady: "review.ready", // session
  ReviewFailed: "review.failed", // session
  ReviewFinishFailed: "review.finish_failed", // session
  CorrectionAdded: "correction.added", // session
  CorrectionFailed: "correction.failed", // session
  Level: "level", // level
  SpeechStarted: "speech.started", // speech
  SpeechStopped: "speech.stopped", // speech
  SpeechPaused: "speech.paused", // speech
  SpeechModels: "speech.models", // speech
  PlaybackStarted: "playback.started", // playback
  PlaybackUnderrun: "playback.underrun", // playback
  PlaybackFinished: "playback.finished", // playback
  PlaybackFailed: "playback.failed", // playback
  VolumeChanged: "volume.changed", // playback
  PlaybackRateChanged: "playback.rate_changed", // playback
  DeviceState: "device.state", // device
  DeviceXrun: "device.xrun", // device
  DeviceLost: "device.lost", // device
  DeviceRestored: "device.restored", // device
  ConfigReloaded: "config.reloaded", // daemon
  ConfigReloadFailed: "config.reload_failed", // daemon
  VisitStarted: "visit.started", // visit
  IdleWarning: "kiosk.idle_warning", // visit
  VisitResumed: "visit.resumed", // visit
  VisitEnded: "visit.ended", // visit
  SignInChanged: "signin.changed", // cue
  CueRecordingStarted: "cue.recording", // cue
  CueRecorded: "cue.recorded", // cue
  CueDiscarded: "cue.discarded", // cue
  CueSpooled: "cue.spooled", // cue
  CueSpoolFailed: "cue.spool_failed", // cue
  CueUploadStep: "cue.upload", // cue
  CueUploaded: "cue.uploaded", // cue
  CueUploadRetrying: "cue.upload_retrying", // cue
  CueUploadFailed: "cue.upload_failed", // cue
  CueTranscript: "cue.transcript", // cue
  CueEvaluation: "cue.evaluation", // cue
  CueResultsFailed: "cue.results_failed", // cue
  CueAnswerDiscarded: "cue.answer_discarded", // cue
});

/** The topics a client subscribes to. */
export const Topic = Object.freeze({
  level: "level",
  speech: "speech",
  playback: "playback",
  device: "device",
  session: "session",
  daemon: "daemon",
  cue: "cue",
  visit: "visit",
});
