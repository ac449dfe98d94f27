import Foundation
import TestSupport
import XCTest

/// ffmpeg as the AAC tests' reference decoder.
enum FFmpegReference {
    /// ffmpeg's PCM16 decode of `path` (interleaved); fails the test if ffmpeg printed a warning.
    static func pcm(_ path: String, file: StaticString = #filePath, line: UInt = #line) throws -> [Int16] {
        let raw = path + ".raw"
        let log = try runTool("ffmpeg", ["-v", "warning", "-y", "-i", path, "-f", "s16le", "-c:a", "pcm_s16le", raw])
        XCTAssertEqual(log.trimmingCharacters(in: .whitespacesAndNewlines), "", "ffmpeg warns about \(path)", file: file, line: line)
        return try Data(contentsOf: URL(fileURLWithPath: raw)).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// The largest difference between two decodes in PCM16 steps, over the shorter one, and
    /// the sample where it is.
    static func largestDifference(_ a: [Int16], _ b: [Int16]) -> (steps: Int, at: Int) {
        var worst = 0, at = 0
        for i in 0..<min(a.count, b.count) {
            let d = abs(Int(a[i]) - Int(b[i]))
            if d > worst { (worst, at) = (d, i) }
        }
        return (worst, at)
    }
}
