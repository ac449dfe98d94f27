/// Writes an AAC frame most significant bit first into a buffer it owns, sized once for the
/// largest legal frame (6144 bits per channel): no allocation per frame. Bits gather in a
/// 64-bit accumulator and leave it a byte at a time.
struct AACBitWriter {
    private let bytes: UnsafeMutablePointer<UInt8>
    let capacity: Int
    private var byteCount = 0
    private var accumulator: UInt64 = 0
    private var pending = 0

    init(capacity: Int) {
        self.capacity = capacity
        bytes = .allocate(capacity: capacity + 16)
    }

    func deallocate() { bytes.deallocate() }

    mutating func reset() {
        byteCount = 0
        accumulator = 0
        pending = 0
    }

    /// Bits written so far.
    var bitCount: Int { byteCount * 8 + pending }

    /// Appends the low `count` bits (0...32) of `value`. Past the capacity (which the rate
    /// loop's budget keeps a frame under) bits are counted but not stored.
    @inline(__always)
    mutating func put(_ value: Int, _ count: Int) {
        guard count > 0 else { return }
        accumulator = accumulator << UInt64(count) | (UInt64(truncatingIfNeeded: value) & ((1 << UInt64(count)) - 1))
        pending += count
        while pending >= 8 {
            pending -= 8
            if byteCount < capacity + 16 { bytes[byteCount] = UInt8(truncatingIfNeeded: accumulator >> UInt64(pending)) }
            byteCount += 1
        }
    }

    mutating func byteAlign() {
        if pending > 0 { put(0, 8 - pending) }
    }

    /// The frame so far (call after ``byteAlign()``).
    var frame: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: bytes, count: min(byteCount, capacity)) }
}
