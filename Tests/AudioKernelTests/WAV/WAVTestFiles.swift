@testable import AudioKernel

/// Builds WAV files chunk by chunk, so tests can make every layout a real file may have.
struct WAVBuilder {
    var bytes: [UInt8] = []

    static func u16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
    static func u32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8((v >> (8 * UInt32($0))) & 0xFF) } }

    static func pcmFormat(channels: UInt16 = 1, rate: UInt32 = 24_000, bits: UInt16 = 16, tag: UInt16 = 1,
                          blockAlign: UInt16? = nil) -> [UInt8] {
        let align = blockAlign ?? channels * bits / 8
        return u16(tag) + u16(channels) + u32(rate) + u32(rate * UInt32(align)) + u16(align) + u16(bits)
    }

    static func extensibleFormat(channels: UInt16 = 1, rate: UInt32 = 24_000, bits: UInt16 = 16, subformat: UInt16 = 1) -> [UInt8] {
        pcmFormat(channels: channels, rate: rate, bits: bits, tag: 0xFFFE) + u16(22) + u16(bits) + u32(4)
            + u16(subformat) + WAVDecoder.subformatGUIDTail
    }

    static func samples(_ s: [Int16]) -> [UInt8] { s.flatMap { u16(UInt16(bitPattern: $0)) } }

    /// A RIFF/WAVE file of the given chunks; each chunk gets its pad byte when odd-sized.
    static func file(_ chunks: [(String, [UInt8])], riffSize: UInt32? = nil, declaredSizes: [String: UInt32] = [:],
                     pad: Bool = true) -> [UInt8] {
        var body: [UInt8] = Array("WAVE".utf8)
        for (id, payload) in chunks {
            body += Array(id.utf8) + u32(declaredSizes[id] ?? UInt32(payload.count)) + payload
            if pad, payload.count % 2 == 1 { body.append(0) }
        }
        return Array("RIFF".utf8) + u32(riffSize ?? UInt32(body.count)) + body
    }
}
