/// Reads an AAC frame most significant bit first. The frame is copied into a buffer with
/// eight zero bytes behind it, so that a read is one unaligned 64-bit load and a shift with no
/// bounds check; reading past the end yields zeros and is caught by ``isOverrun`` where the
/// syntax allows a check (after each element), so a hostile frame costs at most one frame's
/// worth of work.
struct AACBitReader {
    private let bytes: UnsafeMutableRawPointer
    private let capacity: Int
    private(set) var bitCount = 0
    private(set) var position = 0

    /// A reader for frames of up to `capacity` bytes.
    init(capacity: Int) {
        self.capacity = capacity
        bytes = .allocate(byteCount: capacity + 8, alignment: 8)
        bytes.initializeMemory(as: UInt8.self, repeating: 0, count: capacity + 8)
    }

    func deallocate() { bytes.deallocate() }

    /// Starts reading `frame`; false when it is larger than the capacity.
    mutating func reset(_ frame: UnsafeRawBufferPointer) -> Bool {
        guard frame.count <= capacity else { return false }
        if let base = frame.baseAddress { bytes.copyMemory(from: base, byteCount: frame.count) }
        // Zeros behind the frame, whatever the previous frame left there.
        (bytes + frame.count).initializeMemory(as: UInt8.self, repeating: 0, count: 8)
        bitCount = frame.count * 8
        position = 0
        return true
    }

    var isOverrun: Bool { position > bitCount }

    /// A register-backed reader from here on (``AACBitCache``); ``skip(_:)`` by its progress
    /// when done with it.
    func cache() -> AACBitCache {
        AACBitCache(bytes: bytes, byteCount: bitCount >> 3, position: min(position, bitCount))
    }
    var remaining: Int { bitCount - position }

    /// The next 32 bits, left-aligned, without consuming them.
    @inline(__always)
    func peek32() -> UInt32 {
        let p = min(position, bitCount)
        let word = UInt64(bigEndian: (bytes + (p >> 3)).loadUnaligned(as: UInt64.self))
        return UInt32(truncatingIfNeeded: (word << UInt64(p & 7)) >> 32)
    }

    /// `count` bits (0...25) as an unsigned value.
    @inline(__always)
    mutating func read(_ count: Int) -> Int {
        guard count > 0 else { return 0 }
        let value = Int(peek32() >> UInt32(32 &- count))
        position &+= count
        return value
    }

    @inline(__always)
    mutating func bit() -> Bool { read(1) == 1 }

    @inline(__always)
    mutating func skip(_ count: Int) { position &+= count }

    mutating func byteAlign() { position = (position + 7) & ~7 }
}
