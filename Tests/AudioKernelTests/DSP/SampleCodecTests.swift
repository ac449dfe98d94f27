import AudioKernel
import XCTest

/// Float32 to and from every device format: one scale each way, clipping, NaN, dither only
/// where it is needed.
final class SampleCodecTests: XCTestCase {
    private func encode(_ values: [Float], _ format: SampleFormat, dither seed: UInt32 = 1) -> [UInt8] {
        var out = [UInt8](repeating: 0xAA, count: values.count * format.bytesPerSample)
        var dither = TPDFDither(seed: seed)
        values.withUnsafeBufferPointer { v in
            out.withUnsafeMutableBytes { SampleCodec.encode(v.baseAddress!, count: values.count, as: format, into: $0.baseAddress!, dither: &dither) }
        }
        return out
    }

    private func decode(_ bytes: [UInt8], _ format: SampleFormat) -> [Float] {
        let count = bytes.count / format.bytesPerSample
        var out = [Float](repeating: .nan, count: count)
        bytes.withUnsafeBytes { raw in out.withUnsafeMutableBufferPointer { SampleCodec.decode(raw.baseAddress!, format: format, count: count, into: $0.baseAddress!) } }
        return out
    }

    func testEveryIntegerFormatRoundTripsItsOwnValuesExactly() {
        let extremes: [SampleFormat: [Int64]] = [
            .s16: [-32_768, -1, 0, 1, 12_345, 32_767],
            .s24_3: [-8_388_608, -1, 0, 1, 1_234_567, 8_388_607],
            .s24: [-8_388_608, -1, 0, 1, 1_234_567, 8_388_607],
            .s32: [-2_147_483_648, -256, 0, 256, 1_234_567_808],
        ]
        for (format, integers) in extremes {
            let scale = Float(1 << (format.significantBits - 1))
            let floats = integers.map { Float($0) / scale }
            let bytes = encode(floats, format)
            XCTAssertEqual(decode(bytes, format), floats, "\(format)")
        }
    }

    func testEightBitUnsignedIsCentredOn128AndRoundTripsEveryValue() {
        let all = (0...255).map { UInt8($0) }
        let floats = decode(all, .u8)
        XCTAssertEqual(floats[128], 0)
        XCTAssertEqual(floats[0], -1)
        XCTAssertEqual(floats[255], 127.0 / 128)
        XCTAssertEqual(encode(floats, .u8), all, "every 8-bit value comes back (no dither on exact values)")
        XCTAssertEqual(encode([2, -2, .nan], .u8), [255, 0, 128], "clipped, NaN silent")
    }

    func testG711CodesExpandAsTheStandardsTablesAndCompressBackToThemselves() {
        let all = (0...255).map { UInt8($0) }
        for format in [SampleFormat.alaw, .mulaw] {
            let floats = decode(all, format)
            let linear = floats.map { Int($0 * 32_768) }
            // Each code back to itself; a negative zero code of µ-law (0x7F) becomes 0xFF.
            let back = encode(floats, format)
            for code in all where !(format == .mulaw && code == 0x7F) {
                XCTAssertEqual(back[Int(code)], code, "\(format) code \(code) (\(linear[Int(code)]))")
            }
            XCTAssertEqual(Set(linear).count, format == .alaw ? 256 : 255, "\(format): every code its own value")
        }
        // Points of ITU-T G.711's tables (as sox and ALSA expand them, scaled to 16 bits).
        XCTAssertEqual(G711.aLawToLinear[0xD5], 8)
        XCTAssertEqual(G711.aLawToLinear[0x55], -8)
        XCTAssertEqual(G711.aLawToLinear[0xAA], 32_256)
        XCTAssertEqual(G711.aLawToLinear[0x2A], -32_256)
        XCTAssertEqual(G711.muLawToLinear[0xFF], 0)
        XCTAssertEqual(G711.muLawToLinear[0x80], 32_124)
        XCTAssertEqual(G711.muLawToLinear[0x00], -32_124)
        // Compression picks the nearest level's code for values between them, and clips.
        XCTAssertEqual(G711.aLaw(0), 0xD5)
        XCTAssertEqual(G711.aLaw(.max), 0xAA)
        XCTAssertEqual(G711.aLaw(.min), 0x2A)
        XCTAssertEqual(G711.muLaw(0), 0xFF)
        XCTAssertEqual(G711.muLaw(.max), 0x80)
        XCTAssertEqual(G711.muLaw(.min), 0x00)
    }

    func testTheByteLayoutsAreLittleEndianAsDevicesExpect() {
        XCTAssertEqual(encode([-1.0 / 8_388_608], .s24_3), [0xFF, 0xFF, 0xFF])
        XCTAssertEqual(encode([0.5], .s24_3), [0x00, 0x00, 0x40])
        XCTAssertEqual(encode([0.5], .s24), [0x00, 0x00, 0x40, 0x00], "24 bits in the low three bytes")
        XCTAssertEqual(encode([-0.5], .s24), [0x00, 0x00, 0xC0, 0xFF], "sign-extended into the fourth")
        XCTAssertEqual(encode([0.5], .s32), [0x00, 0x00, 0x00, 0x40])
        XCTAssertEqual(encode([0.25], .float), [0x00, 0x00, 0x80, 0x3E])
        // The padding byte of S24_LE is ignored on the way in.
        XCTAssertEqual(decode([0x00, 0x00, 0x40, 0x7F], .s24), [0.5])
    }

    func testClippingNaNAndInfinityNeverWrap() {
        let specials: [Float] = [2, -2, .infinity, -.infinity, .nan, 1, -1]
        XCTAssertEqual(decode(encode(specials, .s16), .s16), [32_767.0 / 32_768, -1, 32_767.0 / 32_768, -1, 0, 32_767.0 / 32_768, -1])
        XCTAssertEqual(decode(encode(specials, .s24_3), .s24_3).map { $0 * 8_388_608 }, [8_388_607, -8_388_608, 8_388_607, -8_388_608, 0, 8_388_607, -8_388_608])
        XCTAssertEqual(decode(encode(specials, .s32), .s32).map { Double($0) * 2_147_483_648 }, [2_147_483_520, -2_147_483_648, 2_147_483_520, -2_147_483_648, 0, 2_147_483_520, -2_147_483_648])
        XCTAssertEqual(decode(encode(specials, .float), .float), [1, -1, 1, -1, 0, 1, -1])
        var nan = Float.nan.bitPattern
        let nanBytes = withUnsafeBytes(of: &nan) { Array($0) }
        XCTAssertEqual(decode(nanBytes, .float), [0], "a NaN from a device is silence")
    }

    func testDitherTouchesOnlySamplesThatAreNotWholeAndStaysWithinOneStep() {
        // Silence and exact PCM16 values pass bit for bit, whatever the dither's state.
        let exact: [Float] = [0, 0.5, -1, 1_000.0 / 32_768, 0]
        XCTAssertEqual(encode(exact, .s16, dither: 7), encode(exact, .s16, dither: 99))
        XCTAssertEqual(decode(encode(exact, .s16), .s16), exact)
        // Values between steps: each within 1.5 steps of the value, and not all rounded alike
        // (a quarter step comes out as 0 or 1, sometimes -1: the dither decorrelates the error).
        let between = [Float](repeating: 0.25 / 32_768, count: 4_000)
        let out = decode(encode(between, .s16), .s16).map { $0 * 32_768 }
        XCTAssertTrue(out.allSatisfy { abs($0 - 0.25) <= 1.25 })
        XCTAssertEqual(out.reduce(0, +) / Float(out.count), 0.25, accuracy: 0.05, "TPDF dither keeps the mean: no bias")
        XCTAssertGreaterThan(Set(out).count, 1)
    }

    func testChannelMapsFrontPairDownmixAndShared() {
        func map(_ input: [Float], _ from: Int, _ to: Int) -> [Float] {
            var out = [Float](repeating: .nan, count: input.count / from * to)
            input.withUnsafeBufferPointer { i in out.withUnsafeMutableBufferPointer { ChannelMap(from: from, to: to).apply(i.baseAddress!, frames: input.count / from, into: $0.baseAddress!) } }
            return out
        }
        XCTAssertEqual(map([0.5, -0.25], 1, 2), [0.5, 0.5, -0.25, -0.25])
        XCTAssertEqual(map([0.5], 1, 6), [0.5, 0.5, 0, 0, 0, 0], "mono to the front pair; centre, LFE and surrounds silent")
        XCTAssertEqual(map([0.5, 0.3, 1, -1], 2, 1), [0.4, 0])
        XCTAssertEqual(map([1, 2, 3, 4, 5, 6], 6, 2), [1, 2])
        XCTAssertEqual(map([1, 2], 2, 4), [1, 2, 0, 0])
    }

    func testDeviceURIsParseTheirFormatQueryAndRefuseNonsense() throws {
        let forced = try AudioDeviceURI(parsing: "alsa:hw:1,0?rate=48000&channels=2&format=s32")
        XCTAssertEqual(forced.name, .alsa(pcm: "hw:1,0"))
        XCTAssertEqual(forced.format, DeviceFormatRequest(sampleRate: 48_000, channels: 2, sampleFormat: .s32))
        XCTAssertEqual(forced.description, "alsa:hw:1,0?rate=48000&channels=2&format=s32")
        XCTAssertEqual(try AudioDeviceURI(parsing: "pulse:kiosk?format=float32").format.sampleFormat, .float)
        XCTAssertEqual(try AudioDeviceURI(parsing: "alsa:hw:0?format=u8").format.sampleFormat, .u8)
        XCTAssertEqual(try AudioDeviceURI(parsing: "alsa:hw:0?format=ulaw").format.sampleFormat, .mulaw)
        let file = try AudioDeviceURI(parsing: "file:/tmp/out.wav?realtime&rate=48000")
        XCTAssertEqual(file.name, .file(path: "/tmp/out.wav", realTime: true))
        XCTAssertEqual(file.description, "file:/tmp/out.wav?realtime&rate=48000")
        XCTAssertEqual(try AudioDeviceURI(parsing: "auto"), .automatic)
        for bad in ["alsa:hw:0?rate=4000", "alsa:hw:0?rate=48k", "alsa:hw:0?channels=9", "alsa:hw:0?format=u12", "alsa:hw:0?volume=1",
                    "alsa:hw:0?rate=48000&rate=44100", "pulse:x?realtime", "alsa:hw:0?rate", "null:?channels=0"] {
            XCTAssertThrowsError(try AudioDeviceURI(parsing: bad), bad) { error in
                XCTAssertEqual((error as? AudioError)?.kind, .invalidName, bad)
            }
        }
    }
}
