import Synchronization

// The player's sounds by number: a reply or a mixed clip addressed by the number its
// `begin` gave it, so that the player is the one place that knows whether that sound is
// still the current one, and answers it in the same step as it queues (a chunk of a stopped
// or replaced sound is dropped, never played in the next one); and the mix layer's network
// side. Any thread: the layer's lock keeps one caller at a time on its network side.
extension StreamingPlayer {
    /// Queues a chunk of reply `number`; nil when that reply was stopped, ended or replaced,
    /// else whether all of it fitted.
    @discardableResult
    public func enqueue(_ bytes: UnsafeRawBufferPointer, reply number: Int) -> Bool? {
        defer { device?.soundArrived() }
        return reply.whileOpen(number) { bytes.isEmpty || intake.enqueue(bytes) }
    }

    /// Queues samples of reply `number` (a clip in the player's format); as above.
    @discardableResult
    public func enqueue(samples: UnsafeBufferPointer<Float>, reply number: Int) -> Bool? {
        defer { device?.soundArrived() }
        return reply.whileOpen(number) { samples.isEmpty || intake.enqueue(samples: samples) }
    }

    /// Samples reply `number` can queue now; nil when it no longer takes any.
    public func queueSpace(reply number: Int) -> Int? { reply.whileOpen(number) { ring.availableToWrite } }

    /// No more chunks for reply `number`, if it is the current one.
    public func endReply(_ number: Int) {
        if reply.end(number, finishing: { _ = intake.finish() }) { device?.soundArrived() }
    }

    /// Stops reply `number` if it is the current one (still coming, or playing out).
    public func stop(reply number: Int) {
        if reply.stop(number) { device?.soundArrived() }
    }

    /// Whether a reply or a mixed clip still takes samples (begun, not ended or stopped).
    public var isTakingSound: Bool { reply.open.load(ordering: .relaxed) || mix.layer.open.load(ordering: .relaxed) }

    // MARK: The mix layer

    /// Starts a clip mixed over whatever plays (a reply, or silence), at once; a mixed clip
    /// still playing is faded out first. Feed it with ``enqueueMix(samples:)``, end it with
    /// ``endMix()``.
    ///
    /// - Returns: the mix's number, which its `mixStarted` and `mixFinished` carry.
    @discardableResult
    public func beginMix() -> Int {
        let number = mix.begin()
        device?.wakeFromIdle()
        return number
    }

    /// Samples the mix layer can take now.
    public var mixQueueSpace: Int { mix.layer.ring.availableToWrite }

    /// Queues samples of the mixed clip (in the player's format).
    @discardableResult
    public func enqueueMix(samples: UnsafeBufferPointer<Float>) -> Bool {
        defer { device?.soundArrived() }
        return mix.enqueue(samples)
    }

    /// No more samples for the mixed clip: `mixFinished` follows when it has played.
    public func endMix() {
        mix.end()
        device?.soundArrived()
    }

    /// Stops the mixed clip within a period, with the stop fade.
    public func stopMix() {
        mix.layer.stop()
        device?.soundArrived()
    }

    /// Queues samples of mixed clip `number`; nil when it was stopped, ended or replaced.
    @discardableResult
    public func enqueueMix(samples: UnsafeBufferPointer<Float>, mix number: Int) -> Bool? {
        defer { device?.soundArrived() }
        return mix.layer.whileOpen(number) { mix.enqueue(samples) }
    }

    /// Samples mixed clip `number` can queue now; nil when it no longer takes any.
    public func mixQueueSpace(mix number: Int) -> Int? { mix.layer.whileOpen(number) { mix.layer.ring.availableToWrite } }

    /// No more samples for mixed clip `number`, if it is the current one.
    public func endMix(_ number: Int) {
        if mix.layer.end(number) { device?.soundArrived() }
    }
}
