import Synchronization

/// A lock-free single-producer, single-consumer ring of samples: how audio crosses between
/// a device thread and the rest of the engine without locks, allocation or blocking.
///
/// Exactly one thread may call the producer side (``write(_:)``, ``availableToWrite``) and
/// exactly one the consumer side (``read(into:)``, ``discard(_:)``, ``availableToRead``).
/// The indices are free-running counters: the producer publishes data with a releasing
/// store of `writeIndex`, the consumer frees space with a releasing store of `readIndex`,
/// and each side acquires the other's index before touching the slots it guards.
public final class RingBuffer<Element: BitwiseCopyable>: @unchecked Sendable {
    /// The number of elements the ring holds (a power of two).
    public let capacity: Int
    @usableFromInline let mask: Int
    @usableFromInline let storage: UnsafeMutablePointer<Element>
    /// The storage's pages: resident only once written, and given back by
    /// ``releaseFreePages()``.
    private let memory: PageMemory

    // The two indices sit on separate cache lines so the producer and the consumer do not
    // invalidate each other's line on every update.
    @usableFromInline let writeIndex = Atomic<Int>(0)
    private let padding: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0)
    @usableFromInline let readIndex = Atomic<Int>(0)

    /// Creates a ring that holds at least `minimumCapacity` elements (rounded up to a power
    /// of two).
    public init(minimumCapacity: Int) {
        precondition(minimumCapacity > 0, "a ring needs room for at least one element")
        let capacity = minimumCapacity <= 1 ? 1 : 1 << (Int.bitWidth - (minimumCapacity - 1).leadingZeroBitCount)
        self.capacity = capacity
        self.mask = capacity - 1
        memory = PageMemory(byteCount: capacity * MemoryLayout<Element>.stride)
        self.storage = memory.base.bindMemory(to: Element.self, capacity: capacity)
    }

    deinit {
        memory.deallocate()
    }

    // MARK: Producer side

    /// The number of elements that can be written now (producer side).
    @inlinable
    public var availableToWrite: Int {
        capacity - (writeIndex.load(ordering: .relaxed) - readIndex.load(ordering: .acquiring))
    }

    /// Every element written so far (producer side).
    public var writtenCount: Int { writeIndex.load(ordering: .relaxed) }

    /// Gives the pages of the ring's free slots back to the kernel (producer side): a ring
    /// sized for the longest stream then keeps resident only what is queued, plus the pages
    /// at either end of it. The consumer reads only slots the producer has published, and
    /// only the producer writes free ones, so no slot being read is released; a released
    /// slot reads as zero until written again.
    public func releaseFreePages() {
        let w = writeIndex.load(ordering: .relaxed)
        let free = capacity - (w - readIndex.load(ordering: .acquiring))
        guard free > 0 else { return }
        let stride = MemoryLayout<Element>.stride
        let start = w & mask
        let first = min(free, capacity - start)
        memory.release((start * stride)..<((start + first) * stride))
        if first < free { memory.release(0..<((free - first) * stride)) }
    }

    /// The bytes of the ring's storage now resident (see ``PageMemory/residentBytes``).
    public var residentBytes: Int { memory.residentBytes }

    /// Writes as many of `elements` as fit (producer side).
    ///
    /// - Returns: the number written, which is less than `elements.count` when the ring is full.
    @inlinable @discardableResult
    public func write(_ elements: UnsafeBufferPointer<Element>) -> Int {
        let w = writeIndex.load(ordering: .relaxed)
        let r = readIndex.load(ordering: .acquiring)
        let n = min(elements.count, capacity - (w - r))
        guard n > 0, let source = elements.baseAddress else { return 0 }
        let start = w & mask
        let first = min(n, capacity - start)
        (storage + start).update(from: source, count: first)
        if first < n { storage.update(from: source + first, count: n - first) }
        writeIndex.store(w + n, ordering: .releasing)
        return n
    }

    // MARK: Consumer side

    /// The number of elements that can be read now (consumer side).
    @inlinable
    public var availableToRead: Int {
        writeIndex.load(ordering: .acquiring) - readIndex.load(ordering: .relaxed)
    }

    /// Every element read or discarded so far (consumer side): the position of the next
    /// element to read, in ``writtenCount``'s numbering.
    public var readCount: Int { readIndex.load(ordering: .relaxed) }

    /// Reads up to `destination.count` elements (consumer side).
    ///
    /// - Returns: the number read, which is less than asked for when the ring runs empty.
    @inlinable @discardableResult
    public func read(into destination: UnsafeMutableBufferPointer<Element>) -> Int {
        let r = readIndex.load(ordering: .relaxed)
        let w = writeIndex.load(ordering: .acquiring)
        let n = min(destination.count, w - r)
        guard n > 0, let target = destination.baseAddress else { return 0 }
        let start = r & mask
        let first = min(n, capacity - start)
        target.update(from: storage + start, count: first)
        if first < n { (target + first).update(from: storage, count: n - first) }
        readIndex.store(r + n, ordering: .releasing)
        return n
    }

    /// Drops up to `count` readable elements without copying them (consumer side).
    ///
    /// - Returns: the number dropped.
    @inlinable @discardableResult
    public func discard(_ count: Int = .max) -> Int {
        let r = readIndex.load(ordering: .relaxed)
        let w = writeIndex.load(ordering: .acquiring)
        let n = min(count, w - r)
        guard n > 0 else { return 0 }
        readIndex.store(r + n, ordering: .releasing)
        return n
    }
}

extension RingBuffer {
    /// Writes as many of `elements` as fit (producer side).
    @inlinable @discardableResult
    public func write(_ elements: [Element]) -> Int {
        elements.withUnsafeBufferPointer { write($0) }
    }
}
