#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// C's printf for the figures the daemon prints: FoundationEssentials has no
/// `String(format:)` (its resident memory is the reason, see docs/performance.md).
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
