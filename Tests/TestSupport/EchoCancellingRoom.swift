import Foundation

/// A kiosk's speaker and microphone in one room, with the sound server's WebRTC echo
/// canceller between them, built from the server's own modules:
///
///     aec_speaker ─(echo canceller's reference)─▶ speaker ─monitor─▶ loopback (delay, attenuation) ─▶ room
///     learner's voice ──────────────────────────────────────────────────────────────────────────────▶ room
///     room.monitor (what the microphone hears) ─▶ echo canceller ─▶ aec_mic
///
/// The daemon plays to `aec_speaker` and records `aec_mic`, as it would on a kiosk whose
/// sound server runs `module-echo-cancel` (PulseAudio's, or pipewire-pulse's, which loads
/// PipeWire's echo-cancel module). The canceller's automatic gain control is off: it would
/// turn the room's volume down and the residue up.
public struct EchoCancellingRoom {
    /// The sink the daemon plays to, and the source it records.
    public static let speaker = "aec_speaker", microphone = "aec_mic"
    /// The loudspeaker itself (its monitor is what the room hears) and the room (where the
    /// learner speaks: play into it).
    public static let loudspeaker = "speaker", room = "room"

    public let echoDelayMilliseconds: Int
    /// The speaker's level at the microphone, as a pactl volume (60 %: -13 dB).
    public let echoVolume: String

    public init(on pulse: PulseAudioServer, echoDelayMilliseconds: Int = 40, echoVolume: String = "60%") throws {
        self.echoDelayMilliseconds = echoDelayMilliseconds
        self.echoVolume = echoVolume
        for sink in [Self.loudspeaker, Self.room] {
            try pulse.loadModule(["module-null-sink", "sink_name=\(sink)", "format=s16le", "rate=24000", "channels=1"], makingSource: "\(sink).monitor")
        }
        try pulse.pactl(["load-module", "module-loopback", "source=\(Self.loudspeaker).monitor", "sink=\(Self.room)",
                         "latency_msec=\(echoDelayMilliseconds)", "source_dont_move=true", "sink_dont_move=true"])
        // The loopback is the room's only stream yet: attenuate it.
        let roomIndex = try Self.index(of: Self.room, in: pulse.pactl(["list", "short", "sinks"]), column: 1)
        let deadline = Date().addingTimeInterval(10)
        var loopback: String?
        while loopback == nil, Date() < deadline {
            loopback = try pulse.pactl(["list", "short", "sink-inputs"]).split(separator: "\n")
                .map { $0.split(separator: "\t").map(String.init) }.first { $0.count > 1 && $0[1] == roomIndex }?.first
            if loopback == nil { usleep(20_000) }  // the loopback's stream appears a moment after the module
        }
        guard let loopback else { throw ToolError(command: "module-loopback", status: -1, stderr: "its stream into the room never appeared") }
        try pulse.pactl(["set-sink-input-volume", loopback, echoVolume])
        try pulse.loadModule(["module-echo-cancel", "aec_method=webrtc", "aec_args=\"analog_gain_control=0 digital_gain_control=0\"",
                              "source_master=\(Self.room).monitor", "sink_master=\(Self.loudspeaker)",
                              "source_name=\(Self.microphone)", "sink_name=\(Self.speaker)"], makingSource: Self.microphone)
    }

    /// The index (first column) of the row of `pactl list short …` whose `column` is `name`.
    private static func index(of name: String, in listing: String, column: Int) throws -> String {
        guard let row = listing.split(separator: "\n").map({ $0.split(separator: "\t").map(String.init) })
            .first(where: { $0.count > column && $0[column] == name }) else {
            throw ToolError(command: "pactl list", status: -1, stderr: "no \(name) in:\n\(listing)")
        }
        return row[0]
    }
}
