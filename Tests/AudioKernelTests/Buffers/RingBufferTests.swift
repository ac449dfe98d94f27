import AudioKernel
import XCTest

final class RingBufferTests: XCTestCase {
    func testCapacityRoundsUpToPowerOfTwo() {
        XCTAssertEqual(RingBuffer<Int16>(minimumCapacity: 1).capacity, 1)
        XCTAssertEqual(RingBuffer<Int16>(minimumCapacity: 3).capacity, 4)
        XCTAssertEqual(RingBuffer<Int16>(minimumCapacity: 1024).capacity, 1024)
        XCTAssertEqual(RingBuffer<Int16>(minimumCapacity: 1025).capacity, 2048)
    }

    func testFillsDrainsAndWrapsAround() {
        let ring = RingBuffer<Int16>(minimumCapacity: 8)
        XCTAssertEqual(ring.availableToWrite, 8)
        XCTAssertEqual(ring.write([1, 2, 3, 4, 5, 6]), 6)
        var out = [Int16](repeating: 0, count: 4)
        XCTAssertEqual(out.withUnsafeMutableBufferPointer { ring.read(into: $0) }, 4)
        XCTAssertEqual(out, [1, 2, 3, 4])
        // This write wraps past the end of the storage.
        XCTAssertEqual(ring.write([7, 8, 9, 10, 11, 12, 13]), 6, "only 6 of 8 free")
        XCTAssertEqual(ring.availableToRead, 8)
        XCTAssertEqual(ring.availableToWrite, 0)
        XCTAssertEqual(ring.write([99]), 0)
        var all = [Int16](repeating: 0, count: 10)
        XCTAssertEqual(all.withUnsafeMutableBufferPointer { ring.read(into: $0) }, 8)
        XCTAssertEqual(Array(all[0..<8]), [5, 6, 7, 8, 9, 10, 11, 12])
        XCTAssertEqual(out.withUnsafeMutableBufferPointer { ring.read(into: $0) }, 0, "empty ring reads nothing")
    }

    func testDiscardDropsReadableElements() {
        let ring = RingBuffer<Float>(minimumCapacity: 16)
        ring.write([1, 2, 3, 4, 5])
        XCTAssertEqual(ring.discard(2), 2)
        XCTAssertEqual(ring.discard(), 3)
        XCTAssertEqual(ring.availableToRead, 0)
        XCTAssertEqual(ring.availableToWrite, 16)
    }

    /// A producer and a consumer thread pass millions of samples of a counting sequence in
    /// chunks of varying sizes; every sample must arrive once, in order.
    func testStressProducerAndConsumerThreadsKeepEverySampleInOrder() {
        let total = 8_000_000
        let ring = RingBuffer<UInt32>(minimumCapacity: 1024)
        let producerDone = expectation(description: "producer")
        let consumerDone = expectation(description: "consumer")
        final class Box: @unchecked Sendable { var mismatches = 0; var received = 0; var firstBad = -1 }
        let result = Box()

        Thread.detachNewThread {
            var chunk = [UInt32](repeating: 0, count: 333)
            var next: UInt32 = 0
            var g = SeededGenerator(seed: 1)
            while Int(next) < total {
                let n = min(Int.random(in: 1...333, using: &g), total - Int(next))
                for i in 0..<n { chunk[i] = next &+ UInt32(i) }
                var written = 0
                while written < n {
                    let w = chunk.withUnsafeBufferPointer { ring.write(UnsafeBufferPointer(rebasing: $0[written..<n])) }
                    if w == 0 { sched_yield() }
                    written += w
                }
                next &+= UInt32(n)
            }
            producerDone.fulfill()
        }
        Thread.detachNewThread {
            var buffer = [UInt32](repeating: 0, count: 257)
            var expected: UInt32 = 0
            var g = SeededGenerator(seed: 2)
            while Int(expected) < total {
                let want = Int.random(in: 1...257, using: &g)
                let n = buffer.withUnsafeMutableBufferPointer { ring.read(into: UnsafeMutableBufferPointer(rebasing: $0[0..<want])) }
                if n == 0 { sched_yield(); continue }
                for i in 0..<n where buffer[i] != expected &+ UInt32(i) {
                    if result.firstBad < 0 { result.firstBad = Int(expected) + i }
                    result.mismatches += 1
                }
                expected &+= UInt32(n)
                result.received += n
            }
            consumerDone.fulfill()
        }
        wait(for: [producerDone, consumerDone], timeout: 120)
        XCTAssertEqual(result.received, total)
        XCTAssertEqual(result.mismatches, 0, "first out-of-order sample at \(result.firstBad)")
        XCTAssertEqual(ring.availableToRead, 0)
    }

    /// A ring sized for two minutes keeps resident only what is queued once the producer
    /// gives back the free pages, and what is queued survives it, while a consumer thread
    /// reads concurrently (ThreadSanitizer runs this suite in CI).
    func testReleasingFreePagesKeepsWhatIsQueuedAndGivesTheRestBack() {
        let ring = RingBuffer<UInt32>(minimumCapacity: 4 << 20)  // 16 MB, like the player's
        XCTAssertEqual(ring.residentBytes, 0, "nothing is resident before it is written")
        let total = 12 << 20  // three times round the ring
        let lead = 48_000     // two seconds of 24 kHz audio queued at most
        final class Box: @unchecked Sendable { var mismatches = 0; var received = 0; var peakResident = 0 }
        let result = Box()
        let consumerDone = expectation(description: "consumer")
        Thread.detachNewThread {
            var buffer = [UInt32](repeating: 0, count: 4_096)
            var expected: UInt32 = 0
            while result.received < total {
                let n = buffer.withUnsafeMutableBufferPointer { ring.read(into: $0) }
                if n == 0 { sched_yield(); continue }
                for i in 0..<n where buffer[i] != expected &+ UInt32(i) { result.mismatches += 1 }
                expected &+= UInt32(n)
                result.received += n
            }
            consumerDone.fulfill()
        }
        var chunk = [UInt32](repeating: 0, count: 4_800)
        var next: UInt32 = 0
        var sinceRelease = 0
        while Int(next) < total {
            // Keep at most `lead` queued, as a reply streamed near real time does.
            if ring.availableToRead >= lead { sched_yield(); continue }
            let n = min(chunk.count, total - Int(next))
            for i in 0..<n { chunk[i] = next &+ UInt32(i) }
            var written = 0
            while written < n {
                written += chunk.withUnsafeBufferPointer { ring.write(UnsafeBufferPointer(rebasing: $0[written..<n])) }
            }
            next &+= UInt32(n)
            sinceRelease += n
            if sinceRelease >= 24_000 {
                ring.releaseFreePages()
                sinceRelease = 0
                result.peakResident = max(result.peakResident, ring.residentBytes)
            }
        }
        wait(for: [consumerDone], timeout: 120)
        XCTAssertEqual(result.mismatches, 0, "a released page took queued samples with it")
        // Queued (at most `lead`) plus a second between releases plus a page at either end.
        let bound = (lead + 24_000 + 4_800) * 4 + 2 * PageMemory.pageSize
        XCTAssertLessThanOrEqual(result.peakResident, bound, "resident \(result.peakResident) bytes of a 16 MB ring")
        ring.releaseFreePages()
        XCTAssertLessThanOrEqual(ring.residentBytes, 2 * PageMemory.pageSize, "an empty ring keeps only partial pages")
    }

    /// Without the release, the same stream leaves every page of the ring resident: what
    /// the player held before (the test above is not vacuous).
    func testWithoutReleasingEveryPageWrittenStaysResident() {
        let ring = RingBuffer<UInt32>(minimumCapacity: 1 << 20)
        var chunk = [UInt32](repeating: 7, count: 4_800)
        var moved = 0
        while moved < 2 << 20 {
            let n = chunk.withUnsafeBufferPointer { ring.write($0) }
            _ = chunk.withUnsafeMutableBufferPointer { ring.read(into: UnsafeMutableBufferPointer(rebasing: $0[0..<n])) }
            moved += n
        }
        XCTAssertEqual(ring.residentBytes, 4 << 20)
    }
}
