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
}
