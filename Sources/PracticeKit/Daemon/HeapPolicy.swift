internal import CAudioShim

/// How the daemon's heap hands memory back: set once, at start, before anything large is
/// allocated.
///
/// glibc serves a block of 128 KiB or more with its own mapping, unmapped when freed, but
/// raises that threshold to the size of any such block freed (up to 32 MiB), and its trim
/// threshold to twice that. The models' files are read whole (smart-turn's is 8.7 MB) and
/// freed once parsed: from then on every block under 8.7 MB came from the heap, and the heap
/// gave back free room at its top only past 17 MB. A turn's audio, its upload and a reply's
/// buffers then stayed resident after use wherever they fell, and the daemon's memory in
/// conversation read 39.5 MB in one run and 42.5 in the next (the arena holding the models:
/// 15.2 against 18.5 MB). With both thresholds fixed, large blocks keep their own mappings
/// and the heap is trimmed at 512 KiB of free room. The audio paths allocate nothing, so no
/// period pays for the mappings: a turn makes a few.
public enum HeapPolicy {
    /// Blocks from this size on get their own mapping.
    public static let mappedFrom = 256 * 1024
    /// Free room at the heap's top beyond this goes back to the kernel.
    public static let trimmedBeyond = 512 * 1024

    /// Fixes the thresholds; false where the C library has no such settings (not glibc).
    @discardableResult
    public static func apply() -> Bool {
        practiced_fix_heap_thresholds(mappedFrom, trimmedBeyond) == 1
    }
}
