/// A device found on the system, as `practicectl devices` shows it.
public struct AudioDeviceInfo: Hashable, Sendable {
    /// Whether a device captures, plays, or both.
    public enum Direction: String, Hashable, Sendable {
        case capture, playback, both
    }

    /// The name to open it by, e.g. `alsa:plughw:CARD=PCH,DEV=0` or `pulse:kiosk.monitor`.
    public var name: AudioDeviceName
    /// A human description from ALSA or PulseAudio.
    public var description: String
    public var direction: Direction

    public init(name: AudioDeviceName, description: String, direction: Direction) {
        self.name = name
        self.description = description
        self.direction = direction
    }
}

/// Lists the devices of both sound stacks.
public enum AudioDeviceList {
    /// ALSA PCMs and, when a PulseAudio server answers, its sinks and sources. A stack that
    /// is not there contributes nothing; its error is returned beside the list.
    public static func all(pulseServer: String? = nil) -> (devices: [AudioDeviceInfo], errors: [AudioError]) {
        var devices = ALSADeviceList.pcms()
        var errors: [AudioError] = []
        do {
            devices += try PulseDeviceList.sinksAndSources(server: pulseServer)
        } catch {
            errors.append(error)
        }
        return (devices, errors)
    }
}
