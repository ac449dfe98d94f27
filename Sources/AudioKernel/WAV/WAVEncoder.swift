/// Encodes PCM16 samples as a canonical WAV file: a 44-byte header (`RIFF`, `fmt `, `data`)
/// followed by the samples, little-endian.
public enum WAVEncoder {
    /// The size of the canonical header.
    public static let headerSize = 44

    /// The largest data chunk a WAV header can describe.
    public static let maxDataByteCount = Int(UInt32.max) - 36

    /// Writes the canonical header for `dataByteCount` bytes of samples into the first 44
    /// bytes of `destination`.
    ///
    /// - Parameter dataByteCount: the size of the data chunk; `nil` writes the streaming
    ///   sizes (0xFFFFFFFF), which readers take as "data to the end of the file".
    public static func writeHeader(
        format: WAVFormat, dataByteCount: Int?, into destination: UnsafeMutableRawBufferPointer
    ) {
        precondition(destination.count >= headerSize, "a WAV header needs 44 bytes")
        let dataSize = dataByteCount.map { UInt32(clamping: $0) } ?? UInt32.max
        let riffSize = dataByteCount.map { UInt32(clamping: $0 + 36) } ?? UInt32.max
        var w = LittleEndianWriter(destination)
        w.fourCC("RIFF"); w.u32(riffSize); w.fourCC("WAVE")
        w.fourCC("fmt "); w.u32(16)
        w.u16(1)  // WAVE_FORMAT_PCM
        w.u16(UInt16(clamping: format.channels))
        w.u32(UInt32(clamping: format.sampleRate))
        w.u32(UInt32(clamping: format.bytesPerSecond))
        w.u16(UInt16(clamping: format.bytesPerFrame))
        w.u16(UInt16(format.bitsPerSample))
        w.fourCC("data"); w.u32(dataSize)
    }

    /// The canonical header for `dataByteCount` bytes of samples.
    public static func header(format: WAVFormat, dataByteCount: Int?) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: headerSize) { buffer, count in
            writeHeader(format: format, dataByteCount: dataByteCount, into: UnsafeMutableRawBufferPointer(buffer))
            count = headerSize
        }
    }

    /// The number of bytes ``encode(_:format:into:)`` writes for `sampleCount` samples.
    public static func encodedSize(sampleCount: Int) -> Int { headerSize + sampleCount * 2 }

    /// Encodes `samples` into `destination` without allocating.
    ///
    /// - Returns: the number of bytes written (``encodedSize(sampleCount:)``).
    @discardableResult
    public static func encode(
        _ samples: UnsafeBufferPointer<Int16>, format: WAVFormat, into destination: UnsafeMutableRawBufferPointer
    ) throws(WAVError) -> Int {
        guard format.sampleFormat == .s16 else { throw .unsupportedBitDepth(format.bitsPerSample) }
        let dataBytes = samples.count * 2
        guard dataBytes <= maxDataByteCount else { throw .tooLarge(byteCount: dataBytes) }
        let total = headerSize + dataBytes
        precondition(destination.count >= total, "destination is shorter than the encoded file")
        writeHeader(format: format, dataByteCount: dataBytes, into: destination)
        guard dataBytes > 0, let source = samples.baseAddress else { return total }
        let body = destination.baseAddress! + headerSize
        #if _endian(little)
        body.copyMemory(from: source, byteCount: dataBytes)
        #else
        for i in 0..<samples.count {
            body.storeBytes(of: source[i].littleEndian, toByteOffset: i * 2, as: Int16.self)
        }
        #endif
        return total
    }

    /// Encodes `samples` as a new WAV file image: one allocation, one copy of the samples.
    public static func encode(_ samples: UnsafeBufferPointer<Int16>, format: WAVFormat = .speech) throws(WAVError) -> [UInt8] {
        let size = encodedSize(sampleCount: samples.count)
        guard format.sampleFormat == .s16 else { throw .unsupportedBitDepth(format.bitsPerSample) }
        guard samples.count * 2 <= maxDataByteCount else { throw .tooLarge(byteCount: samples.count * 2) }
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            // Cannot fail: the size was checked above.
            count = (try? encode(samples, format: format, into: UnsafeMutableRawBufferPointer(buffer))) ?? 0
        }
    }

    /// Encodes `samples` as a new WAV file image.
    public static func encode(_ samples: [Int16], format: WAVFormat = .speech) throws(WAVError) -> [UInt8] {
        let result: Result<[UInt8], WAVError> = samples.withUnsafeBufferPointer { buffer in
            Result { () throws(WAVError) -> [UInt8] in try encode(buffer, format: format) }
        }
        return try result.get()
    }
}

/// Writes little-endian fields into a raw buffer, front to back.
struct LittleEndianWriter {
    let buffer: UnsafeMutableRawBufferPointer
    var offset = 0

    init(_ buffer: UnsafeMutableRawBufferPointer) { self.buffer = buffer }

    mutating func u16(_ v: UInt16) {
        buffer.storeBytes(of: v.littleEndian, toByteOffset: offset, as: UInt16.self)
        offset += 2
    }

    mutating func u32(_ v: UInt32) {
        buffer.storeBytes(of: v.littleEndian, toByteOffset: offset, as: UInt32.self)
        offset += 4
    }

    mutating func fourCC(_ s: StaticString) {
        precondition(s.utf8CodeUnitCount == 4)
        for i in 0..<4 { buffer[offset + i] = s.utf8Start[i] }
        offset += 4
    }
}
