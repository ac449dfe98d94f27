/// One series the daemon exports through `metrics`, declared once with its help text, its
/// kind and the label it is split by (as swift-metrics declares a handle once with its
/// label and dimensions): call sites name the declaration, never spell the series again,
/// and docs/operations.md lists exactly these (`DocumentationTests`).
public struct Metric: Hashable, Sendable {
    public enum Kind: String, Sendable {
        /// Only ever grows (Prometheus `counter`, the name ends in `_total`).
        case counter
        /// Goes up and down (`gauge`).
        case gauge
        /// Latencies in seconds, in ``Metrics/latencyBuckets`` (`histogram`).
        case histogram
    }

    public let name: String
    public let help: String
    public let kind: Kind
    /// The label each value is filed under (`outcome`, `direction`…), nil for one series.
    public let label: String?
    /// A histogram's upper bounds, in seconds (``Metrics/latencyBuckets`` unless given).
    public let buckets: [Double]

    init(_ name: String, _ kind: Kind, label: String? = nil, buckets: [Double] = Metrics.latencyBuckets, help: String) {
        self.name = name
        self.kind = kind
        self.label = label
        self.buckets = buckets
        self.help = help
    }

    /// The labels text of a value (`outcome="answered"`), empty without a label.
    func labels(_ value: String?) -> String {
        guard let label, let value else { return "" }
        return "\(label)=\"\(value)\""
    }
}

extension Metric {
    // Conversations (TalkCo).
    static let sessions = Metric("practiced_sessions_total", .counter, label: "mode", help: "Sessions started, by mode.")
    static let turns = Metric("practiced_turns_total", .counter, label: "outcome", help: "Turns by outcome.")
    static let turnsRecovered = Metric("practiced_turns_recovered_total", .counter, help: "Turns found in the spool at start.")
    static let voiceBargeIns = Metric("practiced_voice_barge_ins_total", .counter, help: "Replies the learner interrupted by speaking over them.")
    static let replays = Metric("practiced_replays_total", .counter, label: "sound", help: "Sounds heard again at the learner's asking (`reply`: `reply.replay`; `turn`: `turn.replay`, the learner's own).")
    static let repliesIncomplete = Metric("practiced_replies_incomplete_total", .counter, help: "Replies whose stream broke off.")
    static let turnEndToUpload = Metric("practiced_turn_end_to_upload_seconds", .histogram,
                                        help: "From the end of the turn to the start of its upload.")
    static let firstAudio = Metric("practiced_first_audio_seconds", .histogram, help: "From the request to the reply's first audio event.")
    static let firstAudioToSound = Metric("practiced_first_audio_to_sound_seconds", .histogram,
                                          help: "From the reply's first audio event to its first sample on the device.")
    static let turnRoundTrip = Metric("practiced_turn_round_trip_seconds", .histogram,
                                      help: "From the end of the turn to the reply's first sample on the device.")
    static let reply = Metric("practiced_reply_seconds", .histogram, help: "From the request to the end of the reply's playback.")

    // Cue practice (Chatterbox).
    static let cueAnswers = Metric("practiced_cue_answers_total", .counter, label: "outcome", help: "Cue answers by outcome.")

    // The spool, shared by both.
    static let spoolSetAside = Metric("practiced_spool_set_aside_total", .counter, label: "kind",
                                      help: "Spooled turns and cue answers set aside (unreadable or damaged).")

    // Hearing: the learned end of turn.
    static let turnModel = Metric("practiced_turn_model_seconds", .histogram, help: "How long smart-turn took to answer at a pause.")
    static let turnEndWait = Metric("practiced_turn_end_wait_seconds", .histogram, buckets: [0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5],
                                    help: "How long a hands-free turn waited after the learner's last word before it ended: what learners wait before the tutor's round trip.")
    static let turnModelAnswers = Metric("practiced_turn_model_answers_total", .counter, label: "decision",
                                         help: "smart-turn's answers at pauses, by what the recorder did.")
    static let speechEndpointDegraded = Metric("practiced_speech_endpoint_degraded", .gauge,
                                               help: "1 while hands-free turns end by the hangover rule because the speech models are missing or damaged.")

    // Visits: one learner after another.
    static let visits = Metric("practiced_visits_total", .counter, label: "ended", help: "Visits ended, by how: done, idle, signout, restart.")
    static let visitLength = Metric("practiced_visit_seconds", .histogram, buckets: [30, 60, 120, 300, 600, 900, 1_800, 3_600],
                                    help: "How long visits lasted, from the first touch to their end.")
    static let idleWarnings = Metric("practiced_idle_warnings_total", .counter, label: "outcome",
                                     help: "\"Still there?\" warnings, by outcome: resumed (a touch or speech) or reset (the visit ended).")
    static let visitActive = Metric("practiced_visit_active", .gauge, help: "1 while a learner's visit is under way.")

    // Devices.
    static let playbackUnderruns = Metric("practiced_playback_underruns_total", .counter, help: "Replies that ran dry before their end.")
    static let xruns = Metric("practiced_xruns_total", .counter, label: "direction", help: "Device overruns and underruns recovered.")
    static let deviceLosses = Metric("practiced_device_losses_total", .counter, label: "direction", help: "Devices that went away.")
    static let devicePeriods = Metric("practiced_device_periods_total", .counter, label: "direction", help: "Periods transferred by device.")
    static let deviceParks = Metric("practiced_device_parks_total", .counter, label: "direction",
                                    help: "Times a device was parked because nobody needed it.")

    // The control socket and the daemon.
    static let controlRequests = Metric("practiced_control_requests_total", .counter, label: "command", help: "Control requests by command.")
    static let controlErrors = Metric("practiced_control_errors_total", .counter, label: "code", help: "Error replies by code.")
    static let slowClientsDropped = Metric("practiced_slow_clients_dropped_total", .counter, help: "Clients disconnected for not reading.")
    static let clients = Metric("practiced_clients", .gauge, help: "Clients connected to the control socket.")
    static let uptime = Metric("practiced_uptime_seconds", .gauge, help: "Seconds since start.")
    static let backendProbe = Metric("practiced_backend_probe_seconds", .histogram, help: "Time of the backend reachability check.")

    /// Every series, in the order docs/operations.md lists them.
    public static let all: [Metric] = [
        sessions, turns, turnsRecovered, voiceBargeIns, replays, repliesIncomplete, turnEndToUpload, firstAudio, firstAudioToSound,
        turnRoundTrip, reply, cueAnswers, spoolSetAside, turnModel, turnEndWait, turnModelAnswers, speechEndpointDegraded, visits, visitLength, idleWarnings, visitActive,
        playbackUnderruns, xruns, deviceLosses,
        devicePeriods, deviceParks, controlRequests, controlErrors, slowClientsDropped, clients, uptime, backendProbe,
    ]
}
