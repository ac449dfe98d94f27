import Foundation
import PracticeKit
import PracticeNet

/// One SSE event of a reply, before it is written.
struct ReplyEvent {
    var name: String
    var data: JSONValue
    /// Seconds of audio this event carries (pacing).
    var audioSeconds: Double = 0

    static func audio(_ pcm: ArraySlice<UInt8>) -> ReplyEvent {
        ReplyEvent(name: "audio", data: ["audio": .string(Data(pcm).base64EncodedString())],
                   audioSeconds: Double(pcm.count) / 48_000)
    }
}

/// How a reply stream ended on the server's side.
enum ReplyStreamEnd {
    case finished
    /// The client hung up (a write failed).
    case clientGone
    /// The fault plan cut the connection.
    case dropped
}

/// Writes a reply as the real server does (`event: <name>\ndata: <json>\n\n`, one event
/// per HTTP chunk, audio at about real-time pace), with the faults of the moment applied.
struct ReplyStreamer {
    var configuration: SimulatorConfiguration
    var faults: SimulatorFaults
    var clock: SimulatedClock

    /// Cuts a phrase's PCM into chunks of varied sizes like the upstream model's (2,400 to
    /// 24,000 bytes; odd sizes sometimes, always with the `odd_chunks` fault).
    func audioChunks(_ pcm: [UInt8], random: inout SeededRandom) -> [ArraySlice<UInt8>] {
        var chunks: [ArraySlice<UInt8>] = []
        var offset = 0
        while offset < pcm.count {
            // A burst holds what the model made in `burstMs` at 1.0-1.2 x real time (48 bytes
            // a millisecond at 24 kHz PCM16).
            var size = faults.burstMs > 0 ? faults.burstMs * (1_000 + Int(random.next() % 201)) * 48 / 1_000
                : 2_400 + Int(random.next() % 21_601)
            if faults.oddChunks { size |= 1 } else if random.next() % 8 != 0 { size &= ~1 }
            let end = min(pcm.count, offset + size)
            chunks.append(pcm[offset..<end])
            offset = end
        }
        return chunks
    }

    /// The bytes of one event. Normally `event: x\ndata: y\n\n`; with the malformed-SSE fault
    /// some events use CRLF or CR line ends and carry a comment first: legal SSE that a
    /// parser reading only the one-line LF form would get wrong.
    func frame(_ event: ReplyEvent, index: Int) -> [UInt8] {
        let data = event.data.serialized(.python)
        guard faults.malformedSSE else { return Array("event: \(event.name)\ndata: \(data)\n\n".utf8) }
        switch index % 3 {
        case 1: return Array(": keep-alive\r\nevent: \(event.name)\r\ndata: \(data)\r\n\r\n".utf8)
        case 2: return Array("event:\(event.name)\rdata:\(data)\r\r".utf8)
        default: return Array("event: \(event.name)\ndata: \(data)\n\n".utf8)
        }
    }

    /// Broken events the malformed-SSE fault slips in after the first audio event: invalid
    /// base64, JSON cut short, a line without a colon, an unknown event type.
    static let malformedFrames: [[UInt8]] = [
        Array("event: audio\ndata: {\"audio\": \"@@@not base64@@@\"}\n\n".utf8),
        Array("event: audio\ndata: {\"audio\": \n\n".utf8),
        Array("garbage line without a colon\n\n".utf8),
        Array("event: surprise\ndata: {\"what\": 1}\n\n".utf8),
    ]

    /// Writes the events. `beforeEnding` runs once the reply is complete or cut by the fault
    /// plan, before the client can see the end (the last chunk, the dropped connection): what
    /// the server saves of the turn is there when the client's next request arrives, however
    /// the two threads are scheduled.
    func write(_ events: [ReplyEvent], to writer: HTTPResponseWriter, beforeEnding: () -> Void = {}) -> ReplyStreamEnd {
        writer.beginChunked(contentType: "text/event-stream; charset=utf-8")
        let start = clock.now
        var audioSent = 0.0
        var audioEvents = 0
        var jitter = SeededRandom(seed: configuration.seed &+ UInt64(events.count))
        var written = 0
        var malformedPending = faults.malformedSSE
        for (index, event) in events.enumerated() {
            if faults.omitDone && event.name == "done" { continue }
            if let limit = faults.dropAfterEvents, written >= limit {
                beforeEnding()
                writer.dropConnection()
                return .dropped
            }
            if event.name == "audio" && configuration.pace > 0 {
                // Audio leaves at the pace the model would produce it; in bursts, one event per
                // burst period, each late by up to the jitter.
                var due = Double(configuration.firstAudioMs) / 1000 + audioSent / configuration.pace
                if faults.burstMs > 0 {
                    let late = faults.burstJitterMs > 0 ? Int(jitter.next() % UInt64(faults.burstJitterMs + 1)) : 0
                    due = Double(configuration.firstAudioMs + audioEvents * faults.burstMs + late) / 1000
                }
                audioEvents += 1
                guard clock.wait(until: start + UInt64(due * 1e9)) else {
                    beforeEnding()
                    writer.dropConnection()
                    return .dropped
                }
                audioSent += event.audioSeconds
            }
            guard send(frame(event, index: index), to: writer) else { return .clientGone }
            written += 1
            if malformedPending && event.name == "audio" {
                malformedPending = false
                for broken in Self.malformedFrames {
                    guard send(broken, to: writer) else { return .clientGone }
                }
            }
        }
        beforeEnding()
        if let limit = faults.dropAfterEvents, written >= limit, written < events.count {
            writer.dropConnection()
            return .dropped
        }
        writer.endChunked()
        return writer.peerGone ? .clientGone : .finished
    }

    /// Sends one event as one HTTP chunk, or a few bytes at a time when dripping.
    private func send(_ bytes: [UInt8], to writer: HTTPResponseWriter) -> Bool {
        guard let dripBytes = faults.dripBytes else { return writer.writeChunk(bytes) }
        let framed = HTTPResponseWriter.chunkFrame(bytes)
        var offset = 0
        while offset < framed.count {
            let end = min(framed.count, offset + dripBytes)
            guard writer.writeRaw(Array(framed[offset..<end])) else { return false }
            offset = end
            if faults.dripMs > 0 && offset < framed.count && !clock.wait(milliseconds: faults.dripMs) { return false }
        }
        return true
    }
}
