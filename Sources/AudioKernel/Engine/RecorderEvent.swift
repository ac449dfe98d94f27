/// What the recorder reports, on the capture thread.
public enum RecorderEvent: Sendable {
    /// The input level over the last interval, in dBFS.
    case level(rmsDBFS: Double, peakDBFS: Double)
    /// The detector heard speech start (whether or not a turn is recording), with the number
    /// of the recording listening for it (nil when none is). `again`: the speech began
    /// earlier and was reported then (`recording` nil); a `listen` has just taken it as its turn.
    case speechStarted(recording: UInt64?, again: Bool = false)
    /// The detector heard speech stop.
    case speechStopped
    /// Learned endpointing: smart-turn answered at a pause that it sounds unfinished
    /// (`probability` below the threshold) and the recorder waits for more; `after` is how
    /// long the answer took, in seconds.
    case speechPaused(probability: Float, waiting: Bool, after: Double)
    /// A turn is complete.
    case turn(RecordedTurn)
}
