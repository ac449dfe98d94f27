import Foundation
import PracticeKit
import XCTest

/// The daemon's heap hands a large block back when it is freed, however large a block freed
/// before it (``HeapPolicy``). Without the policy, glibc raised its thresholds after the
/// first 12 MB block freed, and the next 6 MB block stayed resident after its free.
final class HeapPolicyTests: XCTestCase {
    /// Resident bytes of this process (/proc/self/statm's second field).
    private func resident() throws -> Int {
        let fields = try String(contentsOfFile: "/proc/self/statm", encoding: .utf8).split(separator: " ")
        return try XCTUnwrap(Int(fields[1])) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// A block of `bytes`, every page written, summed so that it is not optimized away, freed.
    private func touchAndFree(_ bytes: Int) -> Int {
        let block = [UInt8](repeating: 1, count: bytes)
        return block.withUnsafeBufferPointer { b in stride(from: 0, to: b.count, by: 4_096).reduce(0) { $0 + Int(b[$1]) } }
    }

    func testALargeBlockFreedAfterALargerOneLeavesNothingResident() throws {
        XCTAssertTrue(HeapPolicy.apply(), "glibc's thresholds were not set")
        // The models' files: read whole and freed once parsed.
        XCTAssertEqual(touchAndFree(12 << 20), 12 << 8)
        let before = try resident()
        // A turn's audio or a reply's buffer, freed after use.
        XCTAssertEqual(touchAndFree(6 << 20), 6 << 8)
        let after = try resident()
        print("figures: resident after a 6 MiB block freed: \(after - before) bytes more")
        XCTAssertLessThan(after - before, 2 << 20, "the freed block stayed resident")
    }
}
