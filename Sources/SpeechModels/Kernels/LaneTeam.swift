import CAudioShim

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Work split into two lanes of rows, one for each core (``LaneTeam``).
protocol LaneWork: AnyObject {
    /// Does lane `index`'s part of the current stage; the two lanes touch disjoint memory.
    func performLane(_ index: Int)
}

/// A second thread that does lane 1 of each stage while the caller does lane 0, so that a
/// model on two cores runs every row-wise step in halves: its products, and also what comes
/// between them (norms, requantization, softmax, lookups), which left the second core idle
/// a fifth of the time when only the products were shared. One thread made once, woken
/// through a condition variable; nothing is allocated per stage.
final class LaneTeam: @unchecked Sendable {
    // Allocated, not stored properties: `&property` of a class is not promised to be the
    // same address each time, and a mutex must not move.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// The stage's work while the thread does lane 1. Not retained: ``run(_:)`` holds it.
    private unowned(unsafe) var work: (any LaneWork)?
    private var pending = false
    private var finished = true
    private var stopping = false
    private var thread = pthread_t()
    /// Whether the thread was made: when it could not be (no memory, a task limit reached),
    /// the caller does both lanes, one after the other, rather than wait for a thread that is
    /// not there.
    private var running = false

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
        let unmanaged = Unmanaged.passRetained(self)
        running = pthread_create(&thread, nil, { context in
            let team = Unmanaged<LaneTeam>.fromOpaque(context!).takeRetainedValue()
            team.loop()
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
    }

    /// Both lanes of `work`'s current stage, returning when both are done.
    func run(_ work: any LaneWork) {
        guard running else {
            work.performLane(0)
            work.performLane(1)
            return
        }
        pthread_mutex_lock(mutex)
        self.work = work
        pending = true
        finished = false
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
        work.performLane(0)
        pthread_mutex_lock(mutex)
        while !finished { pthread_cond_wait(condition, mutex) }
        self.work = nil
        pthread_mutex_unlock(mutex)
    }

    private func loop() {
        // Named, so that per-thread CPU figures (and top -H) tell it from the caller's
        // threads: unnamed it inherits whatever name its creator had.
        practiced_thread_set_name("smart-turn-2")
        pthread_mutex_lock(mutex)
        while true {
            while !pending && !stopping { pthread_cond_wait(condition, mutex) }
            if stopping { break }
            pending = false
            let stage = work!
            pthread_mutex_unlock(mutex)
            stage.performLane(1)
            pthread_mutex_lock(mutex)
            finished = true
            pthread_cond_broadcast(condition)
        }
        pthread_mutex_unlock(mutex)
    }
}
