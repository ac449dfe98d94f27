import FoundationEssentials
import Glibc

/// Why an `audio` event's payload could not be decoded; it spoils that event only.
public enum AudioPayloadError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The data is not JSON, or not an object with a string field `audio`.
    case notAudioJSON
    /// The base64 holds a character outside the alphabet, or its length or padding is wrong.
    case invalidBase64(offset: Int)

    public var description: String {
        switch self {
        case .notAudioJSON: return "audio event data is not a JSON object with a string \"audio\""
        case .invalidBase64(let offset): return "audio event holds invalid base64 at character \(offset)"
        }
    }
}

/// Turns the data of an `audio` event, `{"audio": "<base64>"}`, into PCM bytes.
///
/// The fast path reads the exact shape the server writes (Python's `json.dumps`, with or
/// without the space after the colon) and decodes the base64 straight from the event's bytes
/// into a reusable buffer: no JSON tree, no intermediate String, no allocation once the
/// buffer has grown to the largest chunk. Any other shape (other fields, escapes, other
/// whitespace) goes through the JSON decoder.
public struct AudioPayloadDecoder {
    /// The PCM bytes of the last event decoded (each event's base64 is padded on its own, so
    /// events are decoded separately and their bytes joined by the player).
    public private(set) var pcm: [UInt8] = []

    public init() {}

    /// Decodes one event's data; the bytes are in ``pcm`` afterwards.
    ///
    /// - Returns: the number of PCM bytes.
    @discardableResult
    public mutating func decode(_ data: UnsafeRawBufferPointer) throws(AudioPayloadError) -> Int {
        if let base64 = Self.fastPathBase64(data) {
            return try decodeBase64(base64)
        }
        // The general path: any JSON with a string "audio".
        guard case .object(let fields)? = try? JSONDecoder().decode(JSONValue.self, from: Data(data)),
              case .string(let text)? = fields.last(where: { $0.0 == "audio" })?.1 else { throw .notAudioJSON }
        let utf8 = Array(text.utf8)
        let result = utf8.withUnsafeBytes { bytes in Result { () throws(AudioPayloadError) -> Int in try decodeBase64(bytes) } }
        return try result.get()
    }

    /// The base64 between the quotes when `data` is exactly `{"audio": "..."}` (optional
    /// space after the colon) with no escapes inside; nil otherwise.
    static func fastPathBase64(_ data: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        let prefix: StaticString = "{\"audio\":"
        let n = prefix.utf8CodeUnitCount
        guard data.count >= n + 3, let base = data.baseAddress, memcmp(base, prefix.utf8Start, n) == 0 else { return nil }
        var i = n
        if data[i] == 0x20 { i += 1 }
        guard data[i] == 0x22 else { return nil }  // opening quote
        let start = i + 1
        guard data[data.count - 1] == 0x7D, data[data.count - 2] == 0x22 else { return nil }  // "}
        let end = data.count - 2
        guard end >= start else { return nil }
        let body = UnsafeRawBufferPointer(rebasing: data[start..<end])
        // A quote or backslash inside means escapes or more fields: the general path decides.
        guard let bodyBase = body.baseAddress else { return body }
        if memchr(bodyBase, 0x22, body.count) != nil || memchr(bodyBase, 0x5C, body.count) != nil { return nil }
        return body
    }

    private mutating func decodeBase64(_ text: UnsafeRawBufferPointer) throws(AudioPayloadError) -> Int {
        // One spare byte: groups are stored 4 bytes at a time, the 4th overwritten by the next.
        let needed = text.count / 4 * 3 + 1
        if pcm.count < needed { pcm = [UInt8](repeating: 0, count: max(needed, pcm.count * 2)) }
        let written = pcm.withUnsafeMutableBytes { out in Base64.decode(text, into: out) }
        switch written {
        case .success(let n):
            decodedCount = n
            return n
        case .failure(let error):
            decodedCount = 0
            throw error
        }
    }

    /// The number of valid bytes at the start of ``pcm``.
    public private(set) var decodedCount = 0

    /// The decoded PCM bytes of the last event.
    public var decoded: ArraySlice<UInt8> { pcm[0..<decodedCount] }
}

/// Standard base64 (RFC 4648, with padding) decoding into a caller's buffer.
enum Base64 {
    /// 0...63 for alphabet characters, 0xFF for anything else.
    static let table: [UInt8] = {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() { t[Int(c)] = UInt8(i) }
        return t
    }()

    /// Two characters at once: `pairs[c0 | c1 << 8]` is their 12 bits, or 0xFFFF when either
    /// is outside the alphabet (128 KiB, built on first use). Half the lookups of a
    /// per-character table: with it the decoder outruns Foundation's.
    static let pairs: [UInt16] = {
        var p = [UInt16](repeating: 0xFFFF, count: 65_536)
        for c0 in 0..<256 where table[c0] != 0xFF {
            for c1 in 0..<256 where table[c1] != 0xFF {
                p[c0 | c1 << 8] = UInt16(table[c0]) << 6 | UInt16(table[c1])
            }
        }
        return p
    }()

    /// Decodes `text` into `out` (at least `text.count / 4 * 3 + 1` bytes).
    ///
    /// The loop has no branch per group: each group is one 4-byte load and two pair-table
    /// lookups; their values are ORed together and checked once (the slow scan that finds the
    /// offending offset runs only on a bad payload), and each group's 3 bytes are written with
    /// one 4-byte store.
    static func decode(_ text: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Result<Int, AudioPayloadError> {
        let count = text.count
        guard count % 4 == 0 else { return .failure(.invalidBase64(offset: count)) }
        guard count > 0, let src = text.baseAddress?.assumingMemoryBound(to: UInt8.self), let dst = out.baseAddress else {
            return .success(0)
        }
        precondition(out.count >= count / 4 * 3 + 1, "output too small")
        let fullEnd = count - 4  // every group but the last has no padding
        let fullOK = pairs.withUnsafeBufferPointer { p -> Bool in
            var bad: UInt16 = 0
            var i = 0
            var o = 0
            while i < fullEnd {
                let w = UnsafeRawPointer(src).loadUnaligned(fromByteOffset: i, as: UInt32.self).littleEndian
                let high = p[Int(w & 0xFFFF)], low = p[Int(w >> 16)]
                bad |= high | low
                let v = UInt32(high) << 20 | UInt32(low) << 8
                dst.storeBytes(of: v.bigEndian, toByteOffset: o, as: UInt32.self)
                i &+= 4
                o &+= 3
            }
            return bad & 0xF000 == 0
        }
        return table.withUnsafeBufferPointer { t -> Result<Int, AudioPayloadError> in
            let i = fullEnd
            let o = fullEnd / 4 * 3
            if !fullOK {
                let offset = (0..<fullEnd).first { t[Int(src[$0])] == 0xFF }.map { $0 / 4 * 4 } ?? 0
                return .failure(.invalidBase64(offset: offset))
            }
            let dst = dst.assumingMemoryBound(to: UInt8.self)
            // The last group, with up to two '=' of padding.
            let c2 = src[i + 2], c3 = src[i + 3]
            let pad = c3 == 0x3D ? (c2 == 0x3D ? 2 : 1) : 0
            if pad == 0 && c2 == 0x3D { return .failure(.invalidBase64(offset: i + 2)) }
            let a = t[Int(src[i])], b = t[Int(src[i + 1])]
            let c = pad >= 2 ? 0 : t[Int(c2)]
            let d = pad >= 1 ? 0 : t[Int(c3)]
            if (a | b | c | d) & 0xC0 != 0 { return .failure(.invalidBase64(offset: i)) }
            let v = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
            dst[o] = UInt8(truncatingIfNeeded: v >> 16)
            if pad < 2 { dst[o + 1] = UInt8(truncatingIfNeeded: v >> 8) }
            if pad < 1 { dst[o + 2] = UInt8(truncatingIfNeeded: v) }
            return .success(o + 3 - pad)
        }
    }
}
