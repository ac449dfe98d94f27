#if canImport(Glibc)
import Glibc
#endif

/// Anonymous memory mapped for a buffer sized for the worst case but used far below it: the
/// kernel supplies a page when it is first written, and ``release(_:)`` gives pages back.
///
/// A reply of two minutes or a turn of one must fit, yet most are seconds long: a buffer
/// sized for the longest but allocated by `malloc` keeps every page it ever wrote resident
/// for the life of the process (the player's 16 MB ring was the daemon's largest resident
/// block). Released pages read as zero when touched again; a range being read must not be
/// released, which is the owner's rule to keep (see ``RingBuffer/releaseFreePages()``).
/// Neither mapping nor releasing allocates from the heap, and releasing is one `madvise`.
public struct PageMemory: @unchecked Sendable {
    public let base: UnsafeMutableRawPointer
    /// The mapped size: the requested size rounded up to whole pages.
    public let byteCount: Int
    public static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// Maps `byteCount` bytes (at least one page), readable and writable, not yet resident.
    public init(byteCount: Int) {
        let size = max(1, (byteCount + Self.pageSize - 1) / Self.pageSize) * Self.pageSize
        let address = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        // Address space, not memory, is what mmap reserves; failing means the process is out
        // of address space, where no allocation would succeed either.
        guard let address, address != MAP_FAILED else { fatalError("mmap of \(size) bytes failed: errno \(errno)") }
        base = address
        self.byteCount = size
    }

    /// Gives back the whole pages inside `range` (byte offsets; partial pages at either end
    /// are kept). Their contents read as zero afterwards.
    public func release(_ range: Range<Int>) {
        let start = (max(0, range.lowerBound) + Self.pageSize - 1) / Self.pageSize * Self.pageSize
        let end = min(byteCount, range.upperBound) / Self.pageSize * Self.pageSize
        guard end > start else { return }
        _ = madvise(base + start, end - start, MADV_DONTNEED)
    }

    /// The bytes of it now resident, by `mincore` (for tests and diagnostics; it allocates
    /// a byte per page).
    public var residentBytes: Int {
        let pages = byteCount / Self.pageSize
        var vector = [UInt8](repeating: 0, count: pages)
        guard mincore(base, byteCount, &vector) == 0 else { return -1 }
        return vector.reduce(0) { $0 + Int($1 & 1) } * Self.pageSize
    }

    /// Unmaps the memory; the owner calls it once, from its deinit.
    public func deallocate() {
        munmap(base, byteCount)
    }
}
