/// Opens the backend a device name stands for.
enum DeviceBackends {
    static func openCapture(_ name: AudioDeviceName, _ configuration: AudioStreamConfiguration) throws(AudioError) -> CaptureBackend {
        switch name {
        case .automatic:
            // PulseAudio when a server answers, ALSA's default otherwise.
            if let stream = try? PulseStream(device: nil, capture: true, configuration: configuration) { return stream }
            return try ALSAPCM(name: "default", capture: true, configuration: configuration)
        case .alsa(let pcm):
            return try ALSAPCM(name: pcm, capture: true, configuration: configuration)
        case .pulse(let device):
            return try PulseStream(device: device, capture: true, configuration: configuration)
        case .file(let path, let realTime):
            return try WAVFileCapture(path: path, realTime: realTime, configuration: configuration)
        case .null:
            return NullDevice(configuration: configuration)
        }
    }

    static func openPlayback(_ name: AudioDeviceName, _ configuration: AudioStreamConfiguration) throws(AudioError) -> PlaybackBackend {
        switch name {
        case .automatic:
            if let stream = try? PulseStream(device: nil, capture: false, configuration: configuration) { return stream }
            return try ALSAPCM(name: "default", capture: false, configuration: configuration)
        case .alsa(let pcm):
            return try ALSAPCM(name: pcm, capture: false, configuration: configuration)
        case .pulse(let device):
            return try PulseStream(device: device, capture: false, configuration: configuration)
        case .file(let path, let realTime):
            return try WAVFilePlayback(path: path, realTime: realTime, configuration: configuration)
        case .null:
            return NullDevice(configuration: configuration)
        }
    }
}
