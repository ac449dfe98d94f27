#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The few text operations the daemon took from Foundation's NSString bridge. It links only
/// FoundationEssentials, which has none of them (its resident memory is the reason, see
/// docs/performance.md); each is ASCII-only where the daemon's inputs are (configuration
/// keys, HTTP field names, numbers).
extension StringProtocol {
    /// Without leading and trailing spaces and tabs (and line ends with `newlines`).
    func trimmed(newlines: Bool = true) -> String {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" || (newlines && $0.isNewline) }
        guard let first = firstIndex(where: { !isBlank($0) }), let last = lastIndex(where: { !isBlank($0) }) else { return "" }
        return String(self[first...last])
    }

    /// Whether the two are equal ignoring ASCII case (HTTP field names).
    func equalsIgnoringASCIICase<Other: StringProtocol>(_ other: Other) -> Bool {
        let a = utf8, b = other.utf8
        guard a.count == b.count else { return false }
        return zip(a, b).allSatisfy { x, y in
            x == y || (x | 0x20 == y | 0x20 && (x | 0x20) >= 0x61 && (x | 0x20) <= 0x7A)
        }
    }
}

extension String {
    /// `value` formatted by a printf conversion such as "%.1f" or "%g" (the C library's,
    /// so the figures read as they did with `String(format:)`).
    public static func printf(_ format: String, _ value: Double) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        let count = withVaList([value]) { arguments in
            buffer.withUnsafeMutableBufferPointer { vsnprintf($0.baseAddress, $0.count, format, arguments) }
        }
        guard count >= 0 else { return "\(value)" }
        return String(decoding: buffer.prefix(Swift.min(Int(count), buffer.count - 1)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
