/// A byte buffer reserved once for the longest content it may hold, in ``PageMemory``:
/// appending never allocates, only the pages written are resident, and ``removeAll()``
/// gives them back. The recorder keeps a turn in one: reserved for the longest turn
/// (2.9 MB at 60 s), resident for the turn being recorded, nothing between turns.
public struct PagedBytes: ~Copyable {
    private let memory: PageMemory
    /// The most bytes it holds.
    public let capacity: Int
    public private(set) var count = 0

    public init(capacity: Int) {
        memory = PageMemory(byteCount: capacity)
        self.capacity = capacity
    }

    deinit { memory.deallocate() }

    /// Appends as much of `bytes` as fits; false when some did not.
    @discardableResult
    public mutating func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let n = min(bytes.count, capacity - count)
        if n > 0, let source = bytes.baseAddress { (memory.base + count).copyMemory(from: source, byteCount: n) }
        count += n
        return n == bytes.count
    }

    /// Appends `n` zero bytes (as many as fit).
    public mutating func appendZeros(_ n: Int) {
        let n = min(n, capacity - count)
        (memory.base + count).initializeMemory(as: UInt8.self, repeating: 0, count: n)
        count += n
    }

    /// Empties the buffer and gives its pages back to the kernel.
    public mutating func removeAll() {
        memory.release(0..<count)
        count = 0
    }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: memory.base, count: count))
    }

    public mutating func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeMutableRawBufferPointer(start: memory.base, count: count))
    }
}
