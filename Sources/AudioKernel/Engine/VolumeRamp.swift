/// The player's volume on the device thread: the gain applied now, moved toward the level
/// clients set along a ramp. A step in gain clicks ("zipper noise"); a ramp of a few tens of
/// milliseconds is heard as a smooth change.
struct VolumeRamp {
    private var gain: Float = 1
    private var ramp: GainRamp?
    private let length: Int

    init(length: Int) { self.length = max(1, length) }

    /// Whether the gain is still moving toward a level.
    var isMoving: Bool { ramp != nil }

    /// Moves the gain toward `level` (a new level, even mid-ramp, starts a new ramp from
    /// the gain reached so far), then applies it to `buffer`.
    mutating func apply(_ level: Float, to buffer: UnsafeMutableBufferPointer<Float>) {
        if level != (ramp?.target ?? gain) { ramp = GainRamp(from: ramp?.gain ?? gain, to: level, length: length) }
        if var moving = ramp {
            moving.apply(to: buffer)
            gain = moving.gain
            ramp = moving.isFinished ? nil : moving
        } else if gain != 1 {
            Gain.apply(gain, to: buffer)
        }
    }
}
