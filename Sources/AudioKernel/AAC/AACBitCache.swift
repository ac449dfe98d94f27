/// Reads an ``AACBitReader``'s frame through a 64-bit register, for the spectral loop: a
/// Huffman lookup then depends on one shift of the register instead of a load at the bit
/// position, and the register is refilled seven bytes at a time off that chain. Reads past
/// the frame yield zeros, as the reader's do; ``position`` tells the caller how far it got,
/// so that the reader's overrun check still applies.
struct AACBitCache {
    private let bytes: UnsafeRawPointer
    /// The frame's length in bytes: loads start no later (the 8 zero bytes behind it).
    private let end: Int
    /// The next byte to load.
    private var next: Int
    /// Unread bits, most significant first; `count` of them are valid.
    private var cache: UInt64 = 0
    private var count = 0

    init(bytes: UnsafeRawPointer, byteCount: Int, position: Int) {
        self.bytes = bytes
        end = byteCount
        next = position >> 3
        refill()
        cache <<= UInt64(position & 7)
        count -= position & 7
    }

    /// Bits consumed from the start of the frame.
    var position: Int { next &* 8 &- count }

    /// Makes at least 56 bits valid.
    @inline(__always)
    mutating func refill() {
        let word = UInt64(bigEndian: (bytes + min(next, end)).loadUnaligned(as: UInt64.self))
        cache |= word &>> UInt64(count)
        let taken = (63 &- count) &>> 3
        next &+= taken
        count &+= taken &* 8
    }

    /// The next 32 bits, left-aligned; valid after a refill.
    @inline(__always)
    func peek32() -> UInt32 { UInt32(truncatingIfNeeded: cache &>> 32) }

    @inline(__always)
    mutating func skip(_ n: Int) {
        cache &<<= UInt64(n)
        count &-= n
    }

    /// `n` bits (0...25) after a refill.
    @inline(__always)
    mutating func read(_ n: Int) -> Int {
        let value = Int(truncatingIfNeeded: (cache &>> 1) &>> UInt64(63 &- n))
        skip(n)
        return value
    }
}
