import FoundationEssentials
import Glibc
import PracticeNet

/// The speaker's volume as `volume.get`, `volume.set` and `volume.changed` show it: a
/// linear gain from 0 (silent) to 1 (the reply as the backend sent it), and the same in dB.
public struct VolumeLevel: Codable, Sendable, Equatable {
    /// The gain, 0 to 1.
    public var level: Double
    /// `20·log10(level)`, to 0.1 dB; null at 0 (silence has no finite level).
    public var db: Double?

    public init(level: Double) {
        self.level = level
        db = level > 0 ? (20 * log10(level) * 10).rounded() / 10 : nil
    }

    /// The quietest level a dB value may ask for: below it is silence.
    public static let minimumDecibels = -100.0

    /// The gain for a level in dB (-100 to 0).
    public static func gain(decibels: Double) -> Double { pow(10, decibels / 20) }

    /// Parses a level as the configuration and `practicectl volume` write it: a gain from 0
    /// to 1 (`0.5`), a percentage (`50%`), or dB from -100 to 0 (`-6dB`, `-6 dB`).
    public static func parse(_ text: String) -> Double? {
        let trimmed = text.trimmed(newlines: false).lowercased()
        if trimmed.hasSuffix("db") {
            guard let value = Double(trimmed.dropLast(2).trimmed(newlines: false)), value.isFinite,
                  (minimumDecibels...0).contains(value) else { return nil }
            return gain(decibels: value)
        }
        if trimmed.hasSuffix("%") {
            guard let value = Double(trimmed.dropLast()), (0...100).contains(value) else { return nil }
            return value / 100
        }
        guard let value = Double(trimmed), (0...1).contains(value) else { return nil }
        return value
    }
}
