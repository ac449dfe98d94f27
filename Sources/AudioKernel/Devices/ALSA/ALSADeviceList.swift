internal import CALSA
#if canImport(Glibc)
import Glibc
#endif

/// ALSA PCMs from the configuration's name hints (`snd_device_name_hint`), as `aplay -L`
/// lists them.
enum ALSADeviceList {
    static func pcms() -> [AudioDeviceInfo] {
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        guard snd_device_name_hint(-1, "pcm", &hints) >= 0, let hints else { return [] }
        defer { snd_device_name_free_hint(hints) }
        var result: [AudioDeviceInfo] = []
        var cursor = hints
        while let hint = cursor.pointee {
            defer { cursor += 1 }
            guard let name = take(snd_device_name_get_hint(hint, "NAME")) else { continue }
            let description = take(snd_device_name_get_hint(hint, "DESC"))?
                .split(separator: "\n").joined(separator: " — ") ?? name
            let direction: AudioDeviceInfo.Direction
            switch take(snd_device_name_get_hint(hint, "IOID")) {
            case "Input": direction = .capture
            case "Output": direction = .playback
            default: direction = .both
            }
            result.append(AudioDeviceInfo(name: .alsa(pcm: name), description: description, direction: direction))
        }
        return result
    }

    /// Copies and frees a string alsa-lib allocated.
    private static func take(_ pointer: UnsafeMutablePointer<CChar>?) -> String? {
        guard let pointer else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }
}
