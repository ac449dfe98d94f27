import Foundation

/// How practice-sim misbehaves: each field reproduces one thing the real backend or the
/// network does (see "Behaviour of the real server" in the backend contract). Set on the
/// command line at start-up and replaced at run time through `PUT /_sim/faults` with the
/// same snake_case keys; absent keys keep their defaults (no fault).
public struct SimulatorFaults: Codable, Equatable, Sendable {
    /// Added before every response, in milliseconds.
    public var latencyMs = 0
    /// The next `failCount` calls (any contract route) are answered `failStatus`: 503 with
    /// the "still connecting" detail, 500 with a text/plain body, others with a JSON detail.
    public var failCount = 0
    public var failStatus = 503
    /// `/start` waits `startTimeoutMs` and answers 504 "Session connection timed out".
    public var start504 = false
    /// Reply streams are cut (connection reset) after this many events.
    public var dropAfterEvents: Int?
    /// Slow drip: every event is written `dripBytes` at a time, `dripMs` apart.
    public var dripBytes: Int?
    public var dripMs = 0
    /// Malformed SSE inside replies: a broken JSON audio event, invalid base64, a line of
    /// garbage, comments and CR/CRLF line ends (which a conformant parser must accept).
    public var malformedSSE = false
    /// Streams end (cleanly, chunked terminator) without the `done` event.
    public var omitDone = false
    /// Every audio chunk holds an odd number of bytes.
    public var oddChunks = false
    /// The review model fails: `reviewed` without marks, `completed` with a null summary.
    public var reviewFails = false
    /// The correction model fails: `/corrections` answers 500 text/plain.
    public var correctionFails = false
    /// A late, empty transcription: a turn's reply starts its audio, then `transcript` ""
    /// arrives after the third audio event (a void turn found out mid-playback).
    public var lateVoidTranscript = false
    /// The transcription arrives after the reply (trace 15): a spoken turn's reply comes
    /// with audio and text but no `transcript` event, and is not saved.
    public var noTranscript = false
    /// Wi-Fi delivering in bursts: a reply's audio comes as one event every `burstMs`,
    /// each holding 1.0 to 1.2 times `burstMs` of audio (the model runs a little ahead of
    /// real time), each late by up to `burstJitterMs` (a burst the radio held back).
    public var burstMs = 0
    public var burstJitterMs = 0

    public init() {}

    enum CodingKeys: String, CodingKey {
        case latencyMs = "latency_ms", failCount = "fail_count", failStatus = "fail_status"
        case start504 = "start_504", dropAfterEvents = "drop_after_events", dripBytes = "drip_bytes"
        case dripMs = "drip_ms", malformedSSE = "malformed_sse", omitDone = "omit_done"
        case oddChunks = "odd_chunks", reviewFails = "review_fails", correctionFails = "correction_fails"
        case lateVoidTranscript = "late_void_transcript", noTranscript = "no_transcript"
        case burstMs = "burst_ms", burstJitterMs = "burst_jitter_ms"
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = SimulatorFaults()
        latencyMs = try c.decodeIfPresent(Int.self, forKey: .latencyMs) ?? d.latencyMs
        failCount = try c.decodeIfPresent(Int.self, forKey: .failCount) ?? d.failCount
        failStatus = try c.decodeIfPresent(Int.self, forKey: .failStatus) ?? d.failStatus
        start504 = try c.decodeIfPresent(Bool.self, forKey: .start504) ?? d.start504
        dropAfterEvents = try c.decodeIfPresent(Int.self, forKey: .dropAfterEvents)
        dripBytes = try c.decodeIfPresent(Int.self, forKey: .dripBytes)
        dripMs = try c.decodeIfPresent(Int.self, forKey: .dripMs) ?? d.dripMs
        malformedSSE = try c.decodeIfPresent(Bool.self, forKey: .malformedSSE) ?? d.malformedSSE
        omitDone = try c.decodeIfPresent(Bool.self, forKey: .omitDone) ?? d.omitDone
        oddChunks = try c.decodeIfPresent(Bool.self, forKey: .oddChunks) ?? d.oddChunks
        reviewFails = try c.decodeIfPresent(Bool.self, forKey: .reviewFails) ?? d.reviewFails
        correctionFails = try c.decodeIfPresent(Bool.self, forKey: .correctionFails) ?? d.correctionFails
        lateVoidTranscript = try c.decodeIfPresent(Bool.self, forKey: .lateVoidTranscript) ?? d.lateVoidTranscript
        noTranscript = try c.decodeIfPresent(Bool.self, forKey: .noTranscript) ?? d.noTranscript
        burstMs = try c.decodeIfPresent(Int.self, forKey: .burstMs) ?? d.burstMs
        burstJitterMs = try c.decodeIfPresent(Int.self, forKey: .burstJitterMs) ?? d.burstJitterMs
        guard (400...599).contains(failStatus) else {
            throw DecodingError.dataCorruptedError(forKey: .failStatus, in: c, debugDescription: "fail_status must be 400...599")
        }
        guard latencyMs >= 0, failCount >= 0, dripMs >= 0, (dripBytes ?? 1) > 0, (dropAfterEvents ?? 0) >= 0,
              (0...10_000).contains(burstMs), (0...10_000).contains(burstJitterMs) else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "negative or zero fault value"))
        }
    }
}

/// Everything that shapes practice-sim's behaviour apart from its faults.
public struct SimulatorConfiguration: Sendable {
    /// Seeds every random choice (chunk sizes, phrases, marks), so a run can be repeated.
    public var seed: UInt64 = 1
    /// 1 streams audio at real-time pace; 0 as fast as possible; 4 four times real time.
    public var pace: Double = 1
    /// How long a new session answers 503 on `/chat` (the server's upstream connecting).
    public var connectingMs = 300
    /// Server-side delay before the first audio event (0.15-0.2 s on the real server).
    public var firstAudioMs = 150
    /// How long `/start` waits before its 504, and how long a second `/start` hangs before
    /// `timing, done` (15 s and 30 s on the real server).
    public var startTimeoutMs = 15_000
    public var upstreamIdleMs = 30_000
    /// Review polls before marks appear, and before a summary appears.
    public var pollsUntilMarks = 2
    public var pollsUntilSummary = 2
    public var faults = SimulatorFaults()

    public init() {}
}
