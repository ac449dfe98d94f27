import FoundationEssentials

/// Every command and event of `practiced/1`. The schema, the reference and the daemon's
/// routing are built from these lists; a test checks that every command the daemon
/// answers is here and the other way round.
public enum ProtocolCatalog {
    public static let commands: [any ControlCommand.Type] = [
        // The control server.
        Command.Hello.self, Command.Subscribe.self, Command.Unsubscribe.self,
        // The daemon.
        Command.Ping.self, Command.Status.self, Command.Devices.self, Command.Play.self, Command.PlaybackStop.self, Command.PlaybackRate.self,
        Command.VolumeGet.self, Command.VolumeSet.self,
        Command.LevelWatch.self, Command.ConfigGet.self, Command.Metrics.self,
        // The visit.
        Command.VisitTouch.self, Command.VisitEnd.self,
        // The session.
        Command.SessionStart.self, Command.SessionEnd.self, Command.SessionClose.self, Command.SessionGet.self,
        Command.TurnStart.self, Command.Listen.self, Command.TurnStop.self, Command.TurnCancel.self, Command.Say.self, Command.ReplyReplay.self, Command.TurnReplay.self,
        Command.ReviewGet.self, Command.CorrectionAsk.self, Command.ReviewFinish.self,
        Command.SpoolList.self, Command.SpoolRetry.self, Command.SpoolDiscard.self, Command.Topics.self, Command.Profile.self,
        // Cue practice (backend.kind = chatterbox).
        Command.SignInRequestCode.self, Command.SignInCode.self, Command.SignInRequestLink.self, Command.SignInLink.self, Command.SignOut.self,
        Command.LearnerGet.self, Command.LearnerLanguage.self, Command.CuesGet.self, Command.CueGet.self, Command.CueRecord.self,
        Command.CueStop.self, Command.CueCancel.self, Command.CueHistory.self, Command.CueResults.self, Command.CuePlay.self, Command.CueDiscard.self,
    ]

    public static let events: [any ProtocolEvent.Type] = [
        DaemonSnapshot.self,
        // Session.
        Event.SessionStage.self, Event.SessionCreated.self, Event.SessionResumed.self, Event.SessionFailed.self,
        Event.SessionEnded.self, Event.SessionEndFailed.self, Event.SessionCompleted.self,
        // Turns and the spool.
        Event.TurnStarted.self, Event.TurnRecorded.self, Event.TurnDiscarded.self, Event.TurnSpooled.self, Event.TurnSpoolFailed.self,
        Event.TurnUploading.self, Event.TurnUpload.self, Event.TurnAccepted.self, Event.TurnRetrying.self, Event.TurnPending.self,
        Event.TurnRejected.self, Event.TurnFailed.self, Event.TurnUnanswered.self, Event.SpoolRecovered.self, Event.SpoolDiscarded.self,
        Event.SpoolItemSetAside.self,
        // Replies.
        Event.Transcript.self, Event.ReplyText.self, Event.ReplyAudioStarted.self, Event.ReplyRetrying.self, Event.ReplyTiming.self,
        Event.ReplyMalformed.self, Event.ReplyIncomplete.self, Event.ReplyWaiting.self, Event.ReplyDrained.self, Event.ReplyFinished.self,
        Event.ReplyReplaying.self, Event.ReplyReplayFinished.self, Event.TurnReplaying.self, Event.TurnReplayFinished.self,
        Event.GreetingFailed.self, Event.GreetingUnanswered.self,
        // Review.
        Event.ReviewProgress.self, Event.ReviewReady.self, Event.ReviewFailed.self, Event.ReviewFinishFailed.self,
        Event.CorrectionAdded.self, Event.CorrectionFailed.self,
        // Audio.
        Event.Level.self, Event.SpeechStarted.self, Event.SpeechStopped.self, Event.SpeechPaused.self, Event.SpeechModels.self, Event.PlaybackStarted.self, Event.PlaybackUnderrun.self,
        Event.PlaybackFinished.self, Event.PlaybackFailed.self, Event.VolumeChanged.self, Event.PlaybackRateChanged.self, Event.DeviceState.self, Event.DeviceXrun.self, Event.DeviceLost.self, Event.DeviceRestored.self,
        // Daemon.
        Event.ConfigReloaded.self, Event.ConfigReloadFailed.self,
        // The visit.
        Event.VisitStarted.self, Event.IdleWarning.self, Event.VisitResumed.self, Event.VisitEnded.self,
        // Cue practice.
        Event.SignInChanged.self, Event.CueRecordingStarted.self, Event.CueRecorded.self, Event.CueDiscarded.self, Event.CueSpooled.self,
        Event.CueSpoolFailed.self, Event.CueUploadStep.self, Event.CueUploaded.self, Event.CueUploadRetrying.self, Event.CueUploadFailed.self,
        Event.CueTranscript.self, Event.CueEvaluation.self, Event.CueResultsFailed.self, Event.CueAnswerDiscarded.self,
    ]

    public static var commandNames: [String] { commands.map { $0.name } }

    /// The command named `name`, if the protocol has one.
    public static func command(named name: String) -> (any ControlCommand.Type)? { commands.first { $0.name == name } }

    /// The topics a client may subscribe to (`state` carries only the snapshot).
    public static var subscribableTopics: Set<EventTopic> { Set(EventTopic.allCases.filter { $0 != .state }) }

    /// Their names, sorted (for help texts and completion).
    public static var subscribableTopicNames: [String] { subscribableTopics.map(\.rawValue).sorted() }
}

/// The line a client reads first on connecting.
public struct ServerHello: Codable, Sendable {
    /// Always `hello`.
    public var type: String
    public var `protocol`: String
    /// `major.minor`.
    public var version: String
    /// `practiced <version>`.
    public var server: String
    public var capabilities: [String]
    public var maxLineBytes: Int

    public init(serverVersion: String, capabilities: [String]) {
        type = "hello"
        self.protocol = ControlProtocol.identifier
        version = "\(ControlProtocol.majorVersion).\(ControlProtocol.minorVersion)"
        server = "practiced \(serverVersion)"
        self.capabilities = capabilities
        maxLineBytes = ControlProtocol.maximumLineBytes
    }
}
