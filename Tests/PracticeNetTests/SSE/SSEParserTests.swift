@testable import PracticeNet
import XCTest

final class SSEParserTests: XCTestCase {
    /// Parses `input` whole, one byte at a time, and split in two at every position; all
    /// must agree with `expected`.
    func assertParses(_ input: [UInt8], _ expected: [SSEEvent], file: StaticString = #filePath, line: UInt = #line) {
        var whole = SSEParser()
        XCTAssertEqual(whole.events(from: input), expected, "whole", file: file, line: line)
        var bytewise = SSEParser()
        var bytewiseEvents: [SSEEvent] = []
        for byte in input { bytewiseEvents += bytewise.events(from: [byte]) }
        XCTAssertEqual(bytewiseEvents, expected, "one byte at a time", file: file, line: line)
        for split in 0...input.count {
            var parser = SSEParser()
            let events = parser.events(from: Array(input[..<split])) + parser.events(from: Array(input[split...]))
            XCTAssertEqual(events, expected, "split at \(split)", file: file, line: line)
        }
    }

    func testTheServersOwnForm() {
        let stream = "event: transcript\ndata: {\"text\": \"I\\u2019d like tea\"}\n\n"
            + "event: audio\ndata: {\"audio\": \"AAEC\"}\n\n"
            + "event: response\ndata: {\"text\": \"Sure!\"}\n\n"
            + "event: timing\ndata: {\"step\": \"total\", \"duration_s\": 1.2}\n\nevent: done\ndata: {}\n\n"
        assertParses(Array(stream.utf8), [
            SSEEvent(type: "transcript", data: "{\"text\": \"I\\u2019d like tea\"}"),
            SSEEvent(type: "audio", data: "{\"audio\": \"AAEC\"}"),
            SSEEvent(type: "response", data: "{\"text\": \"Sure!\"}"),
            SSEEvent(type: "timing", data: "{\"step\": \"total\", \"duration_s\": 1.2}"),
            SSEEvent(type: "done", data: "{}"),
        ])
    }

    func testCRLFAndCRLineEnds() {
        assertParses(Array("event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\rdata: 3\n\r\n".utf8), [
            SSEEvent(type: "a", data: "1"),
            SSEEvent(type: "b", data: "2"),
            SSEEvent(type: "message", data: "3"),
        ])
    }

    /// Found by replaying a kept fuzz input in a debug build: an empty read right after a read
    /// that ended in CR looked at a byte that was not there.
    func testAnEmptyReadAfterATrailingCRKeepsTheCRPending() {
        var parser = SSEParser()
        var events = parser.events(from: Array("data: a\r".utf8))
        events += parser.events(from: [])
        events += parser.events(from: Array("\n\r\n".utf8))
        XCTAssertEqual(events, [SSEEvent(type: "message", data: "a")])
        var other = SSEParser()
        XCTAssertEqual(other.events(from: []), [])
        XCTAssertEqual(other.events(from: [0xEF, 0xBB, 0xBF]), [])
        XCTAssertEqual(other.events(from: []), [])
        XCTAssertEqual(other.events(from: Array("data: b\n\n".utf8)), [SSEEvent(type: "message", data: "b")])
    }

    func testBOMCommentsAndMultiLineData() {
        let stream: [UInt8] = [0xEF, 0xBB, 0xBF] + Array(": a comment\ndata: first\ndata:second\ndata\n: ping\n\n".utf8)
        assertParses(stream, [SSEEvent(type: "message", data: "first\nsecond\n")])
        // Only one BOM is skipped; a second one is part of the field name, an unknown field.
        assertParses([0xEF, 0xBB, 0xBF, 0xEF, 0xBB, 0xBF] + Array("data: x\n\ndata: y\n\n".utf8), [SSEEvent(type: "message", data: "y")])
        // A partial BOM is ordinary input: "\u{EF}data" is not the field "data".
        assertParses([0xEF] + Array("data: x\n\ndata: z\n\n".utf8), [SSEEvent(type: "message", data: "z")])
    }

    func testIDPersistsAndIDWithNULIsIgnoredAndRetryTakesDigitsOnly() {
        var parser = SSEParser()
        let events = parser.events(from: Array("id: 7\ndata: a\n\ndata: b\n\nid: bad\0id\ndata: c\n\nretry: 2500\nretry: 12x\n\n".utf8))
        XCTAssertEqual(events.map(\.lastEventID), ["7", "7", "7"])
        XCTAssertEqual(parser.lastEventID, "7")
        XCTAssertEqual(parser.reconnectionTime, 2500)
        assertParses(Array("id: 1\ndata: a\n\nid\ndata: b\n\n".utf8), [
            SSEEvent(type: "message", data: "a", lastEventID: "1"),
            SSEEvent(type: "message", data: "b", lastEventID: ""),
        ])
    }

    func testOneLeadingSpaceIsStrippedAndFieldsWithoutColonAreEmpty() {
        assertParses(Array("data:  two\nevent\ndata\n\n".utf8), [SSEEvent(type: "message", data: " two\n")])
        assertParses(Array("event:\ndata: x\n\n".utf8), [SSEEvent(type: "message", data: "x")])
    }

    func testNoDataMeansNoEventAndUnknownFieldsAreIgnored() {
        assertParses(Array("event: x\n\nfoo: bar\n\n:comment\n\n".utf8), [])
        assertParses(Array("data: 1\nfoo: bar\nDATA: 2\n\n".utf8), [SSEEvent(type: "message", data: "1")])
    }

    func testAnEventWithoutItsBlankLineIsDiscardedAtTheEnd() {
        var parser = SSEParser()
        XCTAssertEqual(parser.events(from: Array("data: kept\n\ndata: lost\n".utf8)), [SSEEvent(type: "message", data: "kept")])
        parser.finish()
        XCTAssertEqual(parser.events(from: Array("\n".utf8)), [], "the discarded event does not come back")
    }

    func testInvalidUTF8BecomesReplacementCharacters() {
        assertParses(Array("data: a".utf8) + [0xFF, 0xC3] + Array("b\n\n".utf8), [SSEEvent(type: "message", data: "a\u{FFFD}\u{FFFD}b")])
    }

    func testLargeAudioLineAcrossManyChunks() {
        let payload = String(repeating: "QUJD", count: 300_000)  // 1.2 MB of base64 on one line
        let stream = Array("event: audio\ndata: {\"audio\": \"\(payload)\"}\n\n".utf8)
        var parser = SSEParser()
        var sizes: [Int] = []
        var offset = 0
        var g = SystemRandomNumberGenerator()
        while offset < stream.count {
            let n = min(stream.count - offset, Int.random(in: 1...70_000, using: &g))
            parser.feed(Array(stream[offset..<(offset + n)])) { event in
                XCTAssertTrue(event.isType("audio"))
                sizes.append(event.data.count)
            }
            offset += n
        }
        XCTAssertEqual(sizes, [payload.count + 13])
    }

    func testTheBufferForSplitLinesIsReusedAcrossEvents() {
        let event = Array("event: audio\ndata: {\"audio\": \"\(String(repeating: "QUJD", count: 8000))\"}\n\n".utf8)
        var parser = SSEParser()
        var capacities: [Int] = []
        for _ in 0..<3 {
            var offset = 0
            var events = 0
            while offset < event.count {
                let n = min(4096, event.count - offset)
                event.withUnsafeBytes { b in parser.feed(UnsafeRawBufferPointer(rebasing: b[offset..<(offset + n)])) { _ in events += 1 } }
                offset += n
            }
            XCTAssertEqual(events, 1)
            capacities.append(parser.splitLineCapacity)
        }
        XCTAssertGreaterThanOrEqual(capacities[0], event.count - 20)
        XCTAssertEqual(Set(capacities).count, 1, "no event after the first grows the buffer")
    }

    func testKeptFuzzInputsParseTheSameInEverySplit() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/sse-fuzz")
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
        XCTAssertGreaterThanOrEqual(files.count, 3, "the kept fuzz inputs are missing")
        for url in files {
            let bytes = [UInt8](try Data(contentsOf: url))
            var whole = SSEParser()
            let expected = whole.events(from: bytes)
            for split in stride(from: 0, through: bytes.count, by: max(1, bytes.count / 64)) {
                var parser = SSEParser()
                XCTAssertEqual(parser.events(from: Array(bytes[..<split])) + parser.events(from: Array(bytes[split...])), expected,
                               "\(url.lastPathComponent) split at \(split)")
            }
        }
    }
}
