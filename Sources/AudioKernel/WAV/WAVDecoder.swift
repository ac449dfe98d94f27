/// Where the samples of a WAV file are, and in which format: the result of walking its
/// RIFF chunks, before any sample is copied.
public struct WAVLayout: Equatable, Sendable {
    /// The format from the `fmt ` chunk.
    public var format: WAVFormat
    /// The byte offset of the first sample.
    public var dataOffset: Int
    /// The bytes of whole frames in the data chunk (a trailing partial frame is dropped).
    public var dataByteCount: Int
    /// Whether the file declared streaming sizes (0 or 0xFFFFFFFF) and the data was taken to
    /// the end of the file.
    public var isStreamed: Bool

    /// The number of interleaved samples.
    public var sampleCount: Int { dataByteCount / format.sampleFormat.bytesPerSample }
    /// The number of frames (samples per channel).
    public var frameCount: Int { dataByteCount / format.bytesPerFrame }
    /// The duration in seconds.
    public var duration: Double { Double(frameCount) / Double(format.sampleRate) }
    /// The byte range of the samples.
    public var dataRange: Range<Int> { dataOffset..<(dataOffset + dataByteCount) }
}

/// A decoded WAV file: its format and its interleaved PCM16 samples (a file of another
/// sample format is converted to PCM16; its `format` then says PCM16).
public struct DecodedWAV: Equatable, Sendable {
    public var format: WAVFormat
    public var samples: [Int16]

    public init(format: WAVFormat, samples: [Int16]) {
        self.format = format
        self.samples = samples
    }

    /// The duration in seconds.
    public var duration: Double { format.duration(ofSamples: samples.count) }
}

/// Reads WAV files by walking their RIFF chunks: `fmt ` (PCM: 8-bit unsigned, 16/24/32-bit
/// integer, 32-bit float; G.711 A-law and µ-law; or `WAVE_FORMAT_EXTENSIBLE` with one of
/// those as its sub-format) and `data`; `LIST`, `fact` and unknown chunks are skipped and the
/// pad byte of odd-sized chunks honoured. A streamed file whose sizes are 0 or 0xFFFFFFFF has
/// its data taken to the end of the file.
///
/// Whatever the bytes, the decoder never reads out of bounds and never traps: anything it
/// cannot accept is a ``WAVError`` naming what is wrong.
public enum WAVDecoder {
    /// The most channels accepted; more is taken to be a corrupt header.
    public static let maxChannels = 64

    /// Finds the format and the sample data of the WAV file in `bytes`.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(WAVError) -> WAVLayout {
        try parse(bytes, fileSize: bytes.count)
    }

    /// Parses a file's header from its first bytes: `bytes` is a prefix of a file of
    /// `fileSize` bytes, so the `data` chunk may run past it (a clip streamed from disk);
    /// every other chunk before `data` must lie inside the prefix.
    public static func parse(_ bytes: UnsafeRawBufferPointer, fileSize: Int) throws(WAVError) -> WAVLayout {
        guard bytes.count >= 12 else { throw .truncatedHeader(byteCount: bytes.count) }
        guard fourCC(bytes, at: 0) == fourCC("RIFF") else { throw .notRIFF }
        guard fourCC(bytes, at: 8) == fourCC("WAVE") else { throw .notWAVE }
        let riffSize = u32(bytes, at: 4)
        let riffIsStreamed = riffSize == 0 || riffSize == UInt32.max

        var format: WAVFormat?
        var data: (offset: Int, size: Int, streamed: Bool)?
        var offset = 12
        while offset < bytes.count {
            let remaining = bytes.count - offset
            if remaining < 8 {
                // Trailing bytes too short for a chunk (a stray pad byte, say) after all
                // that is needed are ignored; before that they are a truncation.
                if format != nil, data != nil { break }
                throw .truncatedChunkHeader(offset: offset)
            }
            let id = fourCC(bytes, at: offset)
            let declared = u32(bytes, at: offset + 4)
            let bodyOffset = offset + 8
            let available = bytes.count - bodyOffset

            if id == fourCC("data") {
                let inFile = max(available, fileSize - bodyOffset)
                let toEnd = declared == UInt32.max || (declared == 0 && riffIsStreamed)
                if toEnd {
                    data = (bodyOffset, inFile, true)
                    break  // nothing can follow data of unknown size
                }
                guard Int(declared) <= inFile else {
                    throw .chunkPastEnd(id: "data", offset: offset, declaredSize: Int(declared), available: inFile)
                }
                data = (bodyOffset, Int(declared), false)
            } else {
                guard Int(declared) <= available else {
                    throw .chunkPastEnd(id: chunkName(id), offset: offset, declaredSize: Int(declared), available: available)
                }
                if id == fourCC("fmt ") {
                    format = try parseFormat(UnsafeRawBufferPointer(rebasing: bytes[bodyOffset..<(bodyOffset + Int(declared))]))
                }
            }
            if format != nil, data != nil { break }
            // Chunks are word-aligned: an odd-sized chunk is followed by one pad byte.
            offset = bodyOffset + Int(declared) + Int(declared & 1)
        }

        guard let data else { throw .missingDataChunk }
        guard let format else { throw data.streamed ? .dataBeforeFormat : .missingFormatChunk }
        let wholeFrames = data.size - data.size % format.bytesPerFrame
        return WAVLayout(format: format, dataOffset: data.offset, dataByteCount: wholeFrames, isStreamed: data.streamed)
    }

    /// Decodes the WAV file in `bytes` into its format and PCM16 samples.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(WAVError) -> DecodedWAV {
        let layout = try parse(bytes)
        var format = layout.format
        format.sampleFormat = .s16
        return DecodedWAV(format: format, samples: samples(of: bytes, layout: layout))
    }

    /// Decodes the WAV file in `bytes` into its format and samples.
    public static func decode(_ bytes: [UInt8]) throws(WAVError) -> DecodedWAV {
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(WAVError) -> DecodedWAV in try decode(raw) }
        }
        return try result.get()
    }

    /// The largest file ``decode(contentsOfFile:)`` reads into memory: 512 MiB, an hour and a
    /// half of 48 kHz stereo PCM16 (a longer recording is streamed, as `play` does).
    public static let maximumFileBytes = 512 << 20

    /// Reads and decodes the WAV file at `path` (at most ``maximumFileBytes``).
    public static func decode(contentsOfFile path: String) throws(WAVError) -> DecodedWAV {
        switch SystemCall.readFile(atPath: path, maximumBytes: maximumFileBytes) {
        case .success(let bytes): return try decode(bytes)
        case .failure(let code) where code == .fileTooLarge:
            throw .io(code, operation: "reading \(path) (more than \(maximumFileBytes >> 20) MiB; a WAV file read whole must be smaller)")
        case .failure(let code): throw .io(code, operation: "reading \(path)")
        }
    }

    /// Copies the samples that `layout` locates in `bytes` (any alignment) into a new array,
    /// converted to PCM16 when the file holds another sample format (rounded, clipped).
    public static func samples(of bytes: UnsafeRawBufferPointer, layout: WAVLayout) -> [Int16] {
        let count = layout.sampleCount
        precondition(layout.dataRange.upperBound <= bytes.count, "layout does not belong to these bytes")
        guard layout.format.sampleFormat == .s16 else {
            var floats = [Float](repeating: 0, count: count)
            floats.withUnsafeMutableBufferPointer { f in
                if count > 0 {
                    SampleCodec.decode(bytes.baseAddress! + layout.dataOffset, format: layout.format.sampleFormat, count: count, into: f.baseAddress!)
                }
            }
            var samples = [Int16](repeating: 0, count: count)
            SampleConverter.float32ToInt16(floats, into: &samples)
            return samples
        }
        return [Int16](unsafeUninitializedCapacity: count) { buffer, initialized in
            if count > 0 {
                UnsafeMutableRawBufferPointer(buffer).copyMemory(
                    from: UnsafeRawBufferPointer(rebasing: bytes[layout.dataRange]))
                #if _endian(big)
                for i in 0..<count { buffer[i] = Int16(littleEndian: buffer[i]) }
                #endif
            }
            initialized = count
        }
    }

    // MARK: - The fmt chunk

    /// The tail shared by every `KSDATAFORMAT_SUBTYPE_*` GUID; the first two bytes carry the
    /// format tag (1 = PCM).
    static let subformatGUIDTail: [UInt8] = [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]

    static func parseFormat(_ chunk: UnsafeRawBufferPointer) throws(WAVError) -> WAVFormat {
        guard chunk.count >= 16 else { throw .formatChunkTooShort(size: chunk.count) }
        var tag = Int(u16(chunk, at: 0))
        let channels = Int(u16(chunk, at: 2))
        let sampleRate = Int(u32(chunk, at: 4))
        let blockAlign = Int(u16(chunk, at: 12))
        let bits = Int(u16(chunk, at: 14))

        if tag == 0xFFFE {  // WAVE_FORMAT_EXTENSIBLE: the real tag sits in the sub-format GUID
            guard chunk.count >= 40 else { throw .formatChunkTooShort(size: chunk.count) }
            let subTag = Int(u16(chunk, at: 24))
            let tailMatches = subformatGUIDTail.indices.allSatisfy { chunk[26 + $0] == subformatGUIDTail[$0] }
            tag = tailMatches ? subTag : 0xFFFE
        }
        guard channels > 0 else { throw .zeroChannels }
        guard channels <= maxChannels else { throw .tooManyChannels(channels) }
        guard sampleRate > 0 else { throw .zeroSampleRate }
        // The valid bits of WAVE_FORMAT_EXTENSIBLE tell 24-bit samples in 32-bit containers
        // from 32-bit ones.
        let validBits = chunk.count >= 20 && u16(chunk, at: 0) == 0xFFFE ? Int(u16(chunk, at: 18)) : bits
        let sampleFormat: SampleFormat
        switch (tag, bits) {
        case (1, 8): sampleFormat = .u8
        case (6, 8): sampleFormat = .alaw
        case (7, 8): sampleFormat = .mulaw
        case (1, 16): sampleFormat = .s16
        case (1, 24): sampleFormat = .s24_3
        case (1, 32): sampleFormat = validBits == 24 ? .s24 : .s32
        case (3, 32): sampleFormat = .float
        case (1, _), (3, _), (6, _), (7, _): throw .unsupportedBitDepth(bits)
        default: throw .unsupportedEncoding(formatTag: tag)
        }
        guard blockAlign == channels * sampleFormat.bytesPerSample else {
            throw .inconsistentBlockAlign(declared: blockAlign, expected: channels * sampleFormat.bytesPerSample)
        }
        return WAVFormat(sampleRate: sampleRate, channels: channels, sampleFormat: sampleFormat)
    }

    // MARK: - Bounds-checked little-endian reads (every caller has checked the length)

    static func u16(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt16 {
        UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    static func u32(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8
            | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24
    }

    static func fourCC(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 { u32(bytes, at: offset) }

    static func fourCC(_ s: StaticString) -> UInt32 {
        let p = s.utf8Start
        return UInt32(p[0]) | UInt32(p[1]) << 8 | UInt32(p[2]) << 16 | UInt32(p[3]) << 24
    }

    /// A chunk id as text for error messages, with unprintable bytes escaped.
    static func chunkName(_ id: UInt32) -> String {
        (0..<4).map { i -> String in
            let b = UInt8(truncatingIfNeeded: id >> (8 * UInt32(i)))
            return (0x20..<0x7F).contains(b) ? String(UnicodeScalar(b)) : "\\x" + String(b, radix: 16)
        }.joined()
    }
}
