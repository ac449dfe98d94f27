/// MPEG-4 audio's decoder configuration (ISO/IEC 14496-3, 1.6.2.1), as the `esds` box
/// carries it: the object type, the sample rate and the channels. Only AAC-LC (object type
/// 2) with 1024-sample frames and a channel configuration from 1 to 7 is accepted; anything
/// else is an error naming it.
public struct AudioSpecificConfig: Equatable, Sendable {
    /// The sample rates a sampling frequency index stands for (table 1.18).
    public static let sampleRates = [96_000, 88_200, 64_000, 48_000, 44_100, 32_000, 24_000, 22_050, 16_000, 12_000, 11_025, 8_000, 7_350]
    /// AAC-LC, the only object type written and read.
    public static let lowComplexity = 2

    public var sampleRate: Int
    /// The channel configuration (1 mono, 2 stereo, … 7 for 7.1).
    public var channelConfiguration: Int

    /// The channels a configuration gives (table 1.19).
    public var channels: Int { [0, 1, 2, 3, 4, 5, 6, 8][channelConfiguration] }

    public init(sampleRate: Int, channelConfiguration: Int) {
        self.sampleRate = sampleRate
        self.channelConfiguration = channelConfiguration
    }

    /// The configuration's bytes: object type, frequency index (or the rate itself when it
    /// has no index), channel configuration, and GASpecificConfig (1024-sample frames, no
    /// core coder, no extension).
    public var bytes: [UInt8] {
        var bits = BitPacker()
        bits.put(Self.lowComplexity, 5)
        if let index = Self.sampleRates.firstIndex(of: sampleRate) {
            bits.put(index, 4)
        } else {
            bits.put(0xF, 4)
            bits.put(sampleRate, 24)
        }
        bits.put(channelConfiguration, 4)
        bits.put(0, 3)  // frameLengthFlag, dependsOnCoreCoder, extensionFlag
        return bits.bytes
    }

    /// Reads a configuration; an object type other than AAC-LC is named in the error (5 and
    /// 29 are HE-AAC's SBR and PS; an LC configuration followed by the SBR sync extension is
    /// HE-AAC too, signalled backward-compatibly).
    public init(parsing bytes: [UInt8]) throws(MPEG4Error) {
        var bits = BitReader(bytes)
        func read(_ count: Int) throws(MPEG4Error) -> Int {
            guard let value = bits.read(count) else { throw .malformedBox(type: "esds", reason: "AudioSpecificConfig cut short") }
            return value
        }
        var objectType = try read(5)
        if objectType == 31 { objectType = 32 + (try read(6)) }
        let index = try read(4)
        let rate: Int
        if index == 0xF {
            rate = try read(24)
        } else if index < Self.sampleRates.count {
            rate = Self.sampleRates[index]
        } else {
            throw .unsupportedConfiguration("sampling frequency index \(index)")
        }
        let channelConfiguration = try read(4)
        guard objectType == Self.lowComplexity else { throw .unsupportedAudioObjectType(objectType, name: Self.name(ofObjectType: objectType)) }
        guard (1...7).contains(channelConfiguration) else {
            throw .unsupportedConfiguration(channelConfiguration == 0 ? "channels given by a program config element" : "channel configuration \(channelConfiguration)")
        }
        guard (1...96_000).contains(rate) else { throw .unsupportedConfiguration("sample rate \(rate)") }
        let frameLengthFlag = try read(1)
        guard frameLengthFlag == 0 else { throw .unsupportedConfiguration("960-sample frames") }
        if try read(1) == 1 { _ = try read(14) }  // dependsOnCoreCoder: coreCoderDelay
        _ = try read(1)  // extensionFlag: none defined for LC
        // Backward-compatible HE-AAC: the SBR sync extension (0x2B7) after the LC config.
        if bits.remaining >= 16, let sync = bits.read(11), sync == 0x2B7, let extensionType = bits.read(5), extensionType == 5,
           let present = bits.read(1), present == 1 {
            throw .unsupportedAudioObjectType(5, name: Self.name(ofObjectType: 5))
        }
        self.init(sampleRate: rate, channelConfiguration: channelConfiguration)
    }

    /// The names of the object types a file is likely to hold (table 1.17).
    static func name(ofObjectType type: Int) -> String {
        switch type {
        case 1: return "AAC Main"
        case 2: return "AAC LC"
        case 3: return "AAC SSR"
        case 4: return "AAC LTP"
        case 5: return "HE-AAC (SBR)"
        case 17: return "ER AAC LC"
        case 23: return "ER AAC LD"
        case 29: return "HE-AAC v2 (PS)"
        case 39: return "ER AAC ELD"
        case 42: return "USAC (xHE-AAC)"
        default: return "object type \(type)"
        }
    }
}

/// Bits written most significant first.
struct BitPacker {
    private(set) var bytes: [UInt8] = []
    private var used = 8

    mutating func put(_ value: Int, _ count: Int) {
        for shift in stride(from: count - 1, through: 0, by: -1) {
            if used == 8 {
                bytes.append(0)
                used = 0
            }
            bytes[bytes.count - 1] |= UInt8((value >> shift) & 1) << (7 - used)
            used += 1
        }
    }
}

/// Bits read most significant first; nil past the end.
struct BitReader {
    private let bytes: [UInt8]
    private var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count * 8 - position }

    mutating func read(_ count: Int) -> Int? {
        guard count <= remaining else { return nil }
        var value = 0
        for _ in 0..<count {
            value = value << 1 | Int(bytes[position >> 3] >> (7 - UInt8(position & 7)) & 1)
            position += 1
        }
        return value
    }
}
