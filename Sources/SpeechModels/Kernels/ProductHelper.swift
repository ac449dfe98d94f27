import CAudioShim

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A second thread for the large integer products: it takes the lower part of the rows
/// while the caller computes the upper, so that a product on two cores takes about half as
/// long. One thread made once, woken through a condition variable with the product's
/// parameters in fields: nothing is allocated per product.
final class ProductHelper: @unchecked Sendable {
    private struct Job {
        var a: UnsafePointer<Int16>
        var rows: Int, depth: Int, strideA: Int
        var b8: UnsafePointer<Int8>?, b16: UnsafePointer<Int16>?
        var columns: Int, strideB: Int
        var c: UnsafeMutablePointer<Int32>, strideC: Int
        /// `b16` holds pair-interleaved values and `a` probabilities (``SparsePairGEMM``).
        var sparse = false
    }

    // Allocated, not stored properties: `&property` of a class is not promised to be the
    // same address each time, and a mutex must not move.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var job: Job?
    private var finished = true
    private var stopping = false
    private var thread = pthread_t()
    /// Whether the thread was made: when it could not be (no memory, a task limit reached),
    /// every product runs on the caller's thread rather than waiting for a helper that is
    /// not there.
    private var running = false
    /// This thread's own scratch for widened weights (``IntegerGEMM/panelCapacity``).
    private let panel = UnsafeMutablePointer<Int16>.allocate(capacity: IntegerGEMM.panelCapacity)

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
        let unmanaged = Unmanaged.passRetained(self)
        running = pthread_create(&thread, nil, { context in
            let helper = Unmanaged<ProductHelper>.fromOpaque(context!).takeRetainedValue()
            helper.loop()
            return nil
        }, unmanaged.toOpaque()) == 0
        if !running { unmanaged.release() }
    }

    /// Ends the thread (the model's deinit calls it: the thread holds a reference until then).
    func stop() {
        guard running else { return }
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
        pthread_join(thread, nil)
        running = false
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
        panel.deallocate()
    }

    private func loop() {
        // Named, so that per-thread CPU figures (and top -H) tell it from the caller's
        // threads: unnamed it inherits whatever name its creator had.
        practiced_thread_set_name("smart-turn-2")
        pthread_mutex_lock(mutex)
        while true {
            while job == nil && !stopping { pthread_cond_wait(condition, mutex) }
            if stopping { break }
            let work = job!
            pthread_mutex_unlock(mutex)
            Self.run(work, panel: panel)
            pthread_mutex_lock(mutex)
            job = nil
            finished = true
            pthread_cond_broadcast(condition)
        }
        pthread_mutex_unlock(mutex)
    }

    private static func run(_ job: Job, panel: UnsafeMutablePointer<Int16>) {
        if job.sparse, let b16 = job.b16 {
            SparsePairGEMM.multiply(job.a, rows: job.rows, keys: job.depth, pairedValues: b16, into: job.c)
        } else if let b8 = job.b8 {
            IntegerGEMM.multiply(job.a, rows: job.rows, depth: job.depth, strideA: job.strideA,
                                 b8, columns: job.columns, strideB: job.strideB, into: job.c, strideC: job.strideC, panel: panel)
        } else if let b16 = job.b16 {
            IntegerGEMM.multiply(job.a, rows: job.rows, depth: job.depth, strideA: job.strideA,
                                 b16, columns: job.columns, strideB: job.strideB, into: job.c, strideC: job.strideC)
        }
    }

    /// `IntegerGEMM.multiply` with the rows shared between this thread and the helper
    /// (`panel`: the calling thread's scratch; each thread widens the weights it uses).
    func multiply(_ a: UnsafePointer<Int16>, rows: Int, depth: Int, strideA: Int,
                  b8: UnsafePointer<Int8>?, b16: UnsafePointer<Int16>?, columns: Int, strideB: Int,
                  into c: UnsafeMutablePointer<Int32>, strideC: Int, panel: UnsafeMutablePointer<Int16>, sparse: Bool = false) {
        // Split on a multiple of the kernel's three rows; small products stay on this thread.
        let split = running && rows >= 24 ? (rows / 2) / 3 * 3 : 0
        if split > 0 {
            pthread_mutex_lock(mutex)
            job = Job(a: a + split * strideA, rows: rows - split, depth: depth, strideA: strideA, b8: b8, b16: b16,
                      columns: columns, strideB: strideB, c: c + split * strideC, strideC: strideC, sparse: sparse)
            finished = false
            pthread_cond_broadcast(condition)
            pthread_mutex_unlock(mutex)
        }
        Self.run(Job(a: a, rows: split > 0 ? split : rows, depth: depth, strideA: strideA, b8: b8, b16: b16,
                     columns: columns, strideB: strideB, c: c, strideC: strideC, sparse: sparse), panel: panel)
        if split > 0 {
            pthread_mutex_lock(mutex)
            while !finished { pthread_cond_wait(condition, mutex) }
            pthread_mutex_unlock(mutex)
        }
    }
}
