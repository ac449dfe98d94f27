/// Reads the box tree of an MPEG-4 file (ISO/IEC 14496-12) down to its AAC track: every
/// box's size is checked against the box that holds it and against the file, the sample
/// table's counts against each other and against the file, so that no value a file holds
/// makes the reader trap, loop or allocate more than the file could justify. The frames
/// themselves stay in the file; ``MPEG4AudioTrack`` says where.
public enum MPEG4Demuxer {
    /// The largest `moov` read into memory. An hour of AAC at 24 kHz has a 340 KiB one.
    public static let maxMovieBoxBytes = 32 << 20

    /// Finds the audio track of the file whose bytes `read(offset, count)` returns, of
    /// `fileSize` bytes. `read` returns fewer bytes only at the end of the file.
    public static func parse(fileSize: Int, read: (Int, Int) throws(MPEG4Error) -> [UInt8]) throws(MPEG4Error) -> MPEG4AudioTrack {
        var offset = 0
        var sawFileType = false
        var movie: [UInt8]?
        while offset < fileSize, movie == nil {
            let head = try read(offset, 16)
            guard head.count >= 8 else { throw .truncatedBoxHeader(offset: offset) }
            let type = fourCC(head, 4)
            var size = Int(be32(head, 0))
            var headerSize = 8
            if size == 1 {
                guard head.count >= 16 else { throw .truncatedBoxHeader(offset: offset) }
                let large = be64(head, 8)
                guard large <= UInt64(Int.max) else { throw .badBoxSize(type: type, offset: offset, size: Int.max, available: fileSize - offset) }
                size = Int(large)
                headerSize = 16
            } else if size == 0 {
                size = fileSize - offset  // to the end of the file
            }
            guard size >= headerSize, size <= fileSize - offset else {
                throw .badBoxSize(type: type, offset: offset, size: size, available: fileSize - offset)
            }
            if offset == 0, !["ftyp", "moov", "mdat", "free", "skip", "wide", "pdin", "uuid", "styp", "junk"].contains(type) {
                throw .notMPEG4
            }
            switch type {
            case "ftyp": sawFileType = true
            case "moov":
                guard size - headerSize <= maxMovieBoxBytes else { throw .tooLarge("a moov box of \(size) bytes") }
                let content = try read(offset + headerSize, size - headerSize)
                guard content.count == size - headerSize else { throw .badBoxSize(type: type, offset: offset, size: size, available: content.count + headerSize) }
                movie = content
            default: break
            }
            offset += size
        }
        guard let movie else { throw sawFileType ? .missingBox("moov") : .notMPEG4 }
        return try track(in: movie, fileSize: fileSize)
    }

    /// Parses a whole file in memory (tests, the fuzzer).
    public static func parse(_ bytes: [UInt8]) throws(MPEG4Error) -> MPEG4AudioTrack {
        try parse(fileSize: bytes.count) { (offset: Int, count: Int) throws(MPEG4Error) -> [UInt8] in
            guard offset < bytes.count else { return [] }
            return Array(bytes[offset..<min(bytes.count, offset + count)])
        }
    }

    // MARK: - The movie

    private static func track(in movie: [UInt8], fileSize: Int) throws(MPEG4Error) -> MPEG4AudioTrack {
        let top = try Box.children(movie, 0..<movie.count, of: "moov")
        guard let header = top.first(where: { $0.type == "mvhd" }) else { throw .missingBox("moov/mvhd") }
        let movieTimescale = try timescale(movie, header, "mvhd")
        for trak in top where trak.type == "trak" {
            let parts = try Box.children(movie, trak.content, of: "trak")
            guard let media = parts.first(where: { $0.type == "mdia" }) else { continue }
            let mdia = try Box.children(movie, media.content, of: "mdia")
            guard let handler = mdia.first(where: { $0.type == "hdlr" }), handler.content.count >= 12 else { continue }
            guard fourCC(movie, handler.content.lowerBound + 8) == "soun" else { continue }  // video, text, hints
            guard let mediaHeader = mdia.first(where: { $0.type == "mdhd" }) else { throw .missingBox("mdia/mdhd") }
            let mediaTimescale = try timescale(movie, mediaHeader, "mdhd")
            guard let information = mdia.first(where: { $0.type == "minf" }) else { throw .missingBox("mdia/minf") }
            guard let table = try Box.children(movie, information.content, of: "minf").first(where: { $0.type == "stbl" }) else {
                throw .missingBox("minf/stbl")
            }
            var track = try sampleTable(movie, table, fileSize: fileSize, timescale: mediaTimescale)
            if let edits = parts.first(where: { $0.type == "edts" }),
               let list = try Box.children(movie, edits.content, of: "edts").first(where: { $0.type == "elst" }) {
                try applyEdits(movie, list, to: &track, movieTimescale: movieTimescale)
            }
            return track
        }
        throw .noAudioTrack
    }

    private static func timescale(_ bytes: [UInt8], _ box: Box, _ type: String) throws(MPEG4Error) -> Int {
        let c = box.content
        guard c.count >= 4 else { throw .malformedBox(type: type, reason: "\(c.count) bytes") }
        let version = bytes[c.lowerBound]
        let at = c.lowerBound + (version == 1 ? 20 : 12)
        guard c.upperBound >= at + 4 else { throw .malformedBox(type: type, reason: "\(c.count) bytes for version \(version)") }
        let scale = Int(be32(bytes, at))
        guard scale > 0 else { throw .malformedBox(type: type, reason: "a timescale of 0") }
        return scale
    }

    private static func sampleTable(_ bytes: [UInt8], _ table: Box, fileSize: Int, timescale: Int) throws(MPEG4Error) -> MPEG4AudioTrack {
        let boxes = try Box.children(bytes, table.content, of: "stbl")
        func find(_ type: String) throws(MPEG4Error) -> Box {
            guard let box = boxes.first(where: { $0.type == type }) else { throw .missingBox("stbl/\(type)") }
            return box
        }
        let config = try sampleDescription(bytes, try find("stsd"))
        // Sizes.
        let stsz = try find("stsz").content
        guard stsz.count >= 12 else { throw .malformedBox(type: "stsz", reason: "\(stsz.count) bytes") }
        let constantSize = Int(be32(bytes, stsz.lowerBound + 4))
        let count = Int(be32(bytes, stsz.lowerBound + 8))
        if constantSize == 0 {
            guard count <= (stsz.count - 12) / 4 else { throw .badSampleTable("stsz claims \(count) samples in \(stsz.count) bytes") }
        } else {
            guard count <= fileSize / constantSize else { throw .badSampleTable("stsz claims \(count) samples of \(constantSize) bytes in a file of \(fileSize)") }
        }
        // Durations.
        let stts = try find("stts").content
        let timeEntries = try entryCount(bytes, stts, "stts", width: 8)
        var mediaDuration = 0, timed = 0
        for index in 0..<timeEntries {
            let at = stts.lowerBound + 8 + index * 8
            let samples = Int(be32(bytes, at)), delta = Int(be32(bytes, at + 4))
            timed += samples
            guard timed <= count else { throw .badSampleTable("stts times \(timed) samples, stsz has \(count)") }
            let (span, overflow) = samples.multipliedReportingOverflow(by: delta)
            let (total, past) = mediaDuration.addingReportingOverflow(span)
            guard !overflow, !past, total <= Int(UInt32.max) << 16 else { throw .badSampleTable("stts adds up to more than \(UInt32.max) << 16 ticks") }
            mediaDuration = total
        }
        guard timed == count else { throw .badSampleTable("stts times \(timed) samples, stsz has \(count)") }
        // Chunks.
        let offsetsBox = boxes.first(where: { $0.type == "stco" }) ?? boxes.first(where: { $0.type == "co64" })
        guard let offsetsBox else { throw .missingBox("stbl/stco") }
        let wide = offsetsBox.type == "co64"
        let chunkCount = try entryCount(bytes, offsetsBox.content, offsetsBox.type, width: wide ? 8 : 4)
        let stsc = try find("stsc").content
        let runs = try entryCount(bytes, stsc, "stsc", width: 12)
        var frames: [MPEG4AudioTrack.Frame] = []
        frames.reserveCapacity(count)
        var sample = 0
        for run in 0..<runs {
            let at = stsc.lowerBound + 8 + run * 12
            let first = Int(be32(bytes, at)), perChunk = Int(be32(bytes, at + 4))
            let next = run + 1 < runs ? Int(be32(bytes, at + 12)) : chunkCount + 1
            guard first >= 1, next > first, next <= chunkCount + 1, perChunk >= 1 else {
                throw .badSampleTable("stsc entry \(run): chunks \(first)..<\(next) of \(chunkCount), \(perChunk) samples each")
            }
            for chunk in first..<next where sample < count {
                let entry = offsetsBox.content.lowerBound + 8 + (chunk - 1) * (wide ? 8 : 4)
                var offset = wide ? Int(clamping: be64(bytes, entry)) : Int(be32(bytes, entry))
                for _ in 0..<min(perChunk, count - sample) {
                    let size = constantSize != 0 ? constantSize : Int(be32(bytes, stsz.lowerBound + 12 + sample * 4))
                    guard offset <= fileSize, size <= fileSize - offset else {
                        throw .badSampleTable("sample \(sample) (\(size) bytes at \(offset)) lies outside the file of \(fileSize) bytes")
                    }
                    frames.append(.init(offset: offset, size: size))
                    offset += size
                    sample += 1
                }
            }
        }
        guard sample == count else { throw .badSampleTable("the chunks hold \(sample) of \(count) samples") }
        return MPEG4AudioTrack(config: config, timescale: timescale, frames: frames, mediaDuration: mediaDuration,
                               presentationStart: 0, presentationLength: mediaDuration)
    }

    /// A table box's entry count, checked against its size.
    private static func entryCount(_ bytes: [UInt8], _ content: Range<Int>, _ type: String, width: Int) throws(MPEG4Error) -> Int {
        guard content.count >= 8 else { throw .malformedBox(type: type, reason: "\(content.count) bytes") }
        let count = Int(be32(bytes, content.lowerBound + 4))
        guard count <= (content.count - 8) / width else { throw .badSampleTable("\(type) claims \(count) entries in \(content.count) bytes") }
        return count
    }

    /// The first sample description: AAC in `mp4a`, or the codec it is instead.
    private static func sampleDescription(_ bytes: [UInt8], _ stsd: Box) throws(MPEG4Error) -> AudioSpecificConfig {
        let c = stsd.content
        guard c.count >= 8, be32(bytes, c.lowerBound + 4) >= 1 else { throw .malformedBox(type: "stsd", reason: "no sample description") }
        let entries = try Box.children(bytes, (c.lowerBound + 8)..<c.upperBound, of: "stsd")
        guard let entry = entries.first else { throw .malformedBox(type: "stsd", reason: "no sample description") }
        guard entry.type == "mp4a" else { throw .unsupportedCodec(codecName(entry.type)) }
        // The audio sample entry: 8 bytes of SampleEntry, 20 of AudioSampleEntry; QuickTime's
        // versions 1 and 2 add 16 and 36.
        let e = entry.content
        guard e.count >= 28 else { throw .malformedBox(type: "mp4a", reason: "\(e.count) bytes") }
        let version = Int(be16(bytes, e.lowerBound + 8))
        let fields = 28 + (version == 1 ? 16 : version == 2 ? 36 : 0)
        guard e.count >= fields else { throw .malformedBox(type: "mp4a", reason: "\(e.count) bytes for version \(version)") }
        var children = try Box.children(bytes, (e.lowerBound + fields)..<e.upperBound, of: "mp4a")
        if let wave = children.first(where: { $0.type == "wave" }) { children += try Box.children(bytes, wave.content, of: "wave") }
        guard let esds = children.first(where: { $0.type == "esds" }) else { throw .missingBox("mp4a/esds") }
        return try AudioSpecificConfig(parsing: try decoderSpecificInfo(bytes, esds.content))
    }

    /// The AudioSpecificConfig inside `esds`'s descriptors (ISO/IEC 14496-1, 7.2.6).
    private static func decoderSpecificInfo(_ bytes: [UInt8], _ content: Range<Int>) throws(MPEG4Error) -> [UInt8] {
        var reader = DescriptorReader(bytes: bytes, position: content.lowerBound + 4, end: content.upperBound)
        guard content.count >= 4, let es = try reader.descriptor(), es.tag == 0x03 else { throw .malformedBox(type: "esds", reason: "no ES descriptor") }
        var inES = DescriptorReader(bytes: bytes, position: es.body.lowerBound, end: es.body.upperBound)
        guard let flags = inES.skip(2).flatMap({ inES.byte() }) else { throw .malformedBox(type: "esds", reason: "ES descriptor cut short") }
        if flags & 0x80 != 0 { _ = inES.skip(2) }
        if flags & 0x40 != 0, let length = inES.byte() { _ = inES.skip(Int(length)) }
        if flags & 0x20 != 0 { _ = inES.skip(2) }
        guard let config = try inES.descriptor(), config.tag == 0x04, config.body.count >= 13 else {
            throw .malformedBox(type: "esds", reason: "no decoder config descriptor")
        }
        let objectType = bytes[config.body.lowerBound]
        switch objectType {
        case 0x40, 0x66, 0x67, 0x68: break  // MPEG-4 audio; MPEG-2 AAC Main, LC, SSR
        case 0x69, 0x6B: throw .unsupportedCodec("MP3")
        default: throw .unsupportedCodec("object type 0x" + String(objectType, radix: 16, uppercase: true))
        }
        var inConfig = DescriptorReader(bytes: bytes, position: config.body.lowerBound + 13, end: config.body.upperBound)
        if objectType == 0x66 || objectType == 0x68 {
            throw .unsupportedAudioObjectType(objectType == 0x66 ? 1 : 3, name: objectType == 0x66 ? "MPEG-2 AAC Main" : "MPEG-2 AAC SSR")
        }
        guard let specific = try inConfig.descriptor(), specific.tag == 0x05 else {
            throw .malformedBox(type: "esds", reason: "no decoder specific info")
        }
        return Array(bytes[specific.body])
    }

    /// The edit list's first edit that is not empty: the priming it skips and the length it
    /// presents.
    private static func applyEdits(_ bytes: [UInt8], _ elst: Box, to track: inout MPEG4AudioTrack, movieTimescale: Int) throws(MPEG4Error) {
        let c = elst.content
        guard c.count >= 8 else { throw .malformedBox(type: "elst", reason: "\(c.count) bytes") }
        let version = bytes[c.lowerBound]
        let width = version == 1 ? 20 : 12
        let count = Int(be32(bytes, c.lowerBound + 4))
        guard count <= (c.count - 8) / width else { throw .badSampleTable("elst claims \(count) entries in \(c.count) bytes") }
        for index in 0..<count {
            let at = c.lowerBound + 8 + index * width
            let duration = version == 1 ? Int(clamping: be64(bytes, at)) : Int(be32(bytes, at))
            let start = version == 1 ? Int(Int64(bitPattern: be64(bytes, at + 8))) : Int(Int32(bitPattern: be32(bytes, at + 4)))
            if start == -1 { continue }  // an empty edit: a pause before the media
            guard start >= 0, start <= track.mediaDuration else { throw .badSampleTable("an edit starts at \(start) of \(track.mediaDuration)") }
            // The edit's duration is in the movie's timescale; 0 means to the end.
            // In Double and clamped to the media before it becomes an Int: a duration of
            // 2^64 - 1 must not trap.
            let scaled = (Double(duration) * Double(track.timescale) / Double(movieTimescale)).rounded()
            let length = duration == 0 ? track.mediaDuration - start : Int(min(scaled, Double(track.mediaDuration - start)))
            track.presentationStart = start
            track.presentationLength = min(length, track.mediaDuration - start)
            return
        }
    }

    /// What a sample entry's type stands for.
    static func codecName(_ type: String) -> String {
        switch type {
        case "alac": return "Apple Lossless (alac)"
        case "Opus": return "Opus"
        case "fLaC": return "FLAC (fLaC)"
        case ".mp3": return "MP3 (.mp3)"
        case "ac-3", "ec-3": return "Dolby Digital (\(type))"
        case "samr", "sawb": return "AMR (\(type))"
        default: return "'\(type)'"
        }
    }
}

/// A box inside a parsed parent: its type and the range of its content.
struct Box {
    var type: String
    var content: Range<Int>

    /// The boxes filling `range` of `bytes`, each checked to lie inside it.
    static func children(_ bytes: [UInt8], _ range: Range<Int>, of parent: String) throws(MPEG4Error) -> [Box] {
        var boxes: [Box] = []
        var offset = range.lowerBound
        while range.upperBound - offset >= 8 {
            var size = Int(be32(bytes, offset))
            let type = fourCC(bytes, offset + 4)
            var header = 8
            if size == 1 {
                guard range.upperBound - offset >= 16 else { throw .truncatedBoxHeader(offset: offset) }
                size = Int(clamping: be64(bytes, offset + 8))
                header = 16
            } else if size == 0 {
                size = range.upperBound - offset
            }
            guard size >= header, size <= range.upperBound - offset else {
                throw .badBoxSize(type: type, offset: offset, size: size, available: range.upperBound - offset)
            }
            boxes.append(Box(type: type, content: (offset + header)..<(offset + size)))
            offset += size
        }
        return boxes
    }
}

/// MPEG-4 descriptors (a tag, a size in 7-bit groups, the body) inside `esds`.
private struct DescriptorReader {
    let bytes: [UInt8]
    var position: Int
    let end: Int

    mutating func byte() -> UInt8? {
        guard position < end else { return nil }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func skip(_ count: Int) -> Void? {
        guard count <= end - position else { return nil }
        position += count
        return ()
    }

    mutating func descriptor() throws(MPEG4Error) -> (tag: UInt8, body: Range<Int>)? {
        guard let tag = byte() else { return nil }
        var size = 0
        for _ in 0..<4 {
            guard let group = byte() else { throw .malformedBox(type: "esds", reason: "a descriptor's size is cut short") }
            size = size << 7 | Int(group & 0x7F)
            if group & 0x80 == 0 { break }
        }
        guard size <= end - position else { throw .malformedBox(type: "esds", reason: "a descriptor of \(size) bytes in \(end - position)") }
        defer { position += size }
        return (tag, position..<(position + size))
    }
}

func be16(_ b: [UInt8], _ at: Int) -> UInt16 { UInt16(b[at]) << 8 | UInt16(b[at + 1]) }
func be32(_ b: [UInt8], _ at: Int) -> UInt32 { UInt32(b[at]) << 24 | UInt32(b[at + 1]) << 16 | UInt32(b[at + 2]) << 8 | UInt32(b[at + 3]) }
func be64(_ b: [UInt8], _ at: Int) -> UInt64 { UInt64(be32(b, at)) << 32 | UInt64(be32(b, at + 4)) }
func fourCC(_ b: [UInt8], _ at: Int) -> String {
    String(decoding: b[at..<(at + 4)].map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
}
