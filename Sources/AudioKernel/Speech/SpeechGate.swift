/// The speech gate of the iOS client: a turn holds speech when the RMS of its PCM16
/// samples is above a threshold (300 by default). A turn at or below it is dropped before
/// anything is uploaded.
public struct SpeechGate: Equatable, Sendable {
    /// The RMS (in PCM16 units) a turn must exceed to count as speech.
    public var threshold: Double

    /// The threshold of the iOS client and the backend contract.
    public static let defaultThreshold: Double = 300

    public init(threshold: Double = SpeechGate.defaultThreshold) {
        self.threshold = threshold
    }

    /// Whether a block of the given level holds speech. The comparison is made on the exact
    /// integer sum of squares, so a turn exactly at the threshold is reliably rejected.
    public func holdsSpeech(_ level: SignalLevel) -> Bool {
        guard level.sampleCount > 0 else { return false }
        // rms > t  ⇔  sum > t² · n, without a square root or its rounding.
        return Double(level.sumOfSquares) > threshold * threshold * Double(level.sampleCount)
    }

    /// Whether the raw PCM16 `samples` hold speech.
    public func holdsSpeech(_ samples: UnsafeBufferPointer<Int16>) -> Bool {
        holdsSpeech(SignalLevel(sampleCount: samples.count, sumOfSquares: SignalLevel.sumOfSquares(samples), peak: 0))
    }

    /// Whether the raw PCM16 `samples` hold speech.
    public func holdsSpeech(_ samples: [Int16]) -> Bool {
        samples.withUnsafeBufferPointer { holdsSpeech($0) }
    }

    /// Whether the WAV file in `wav` holds speech. The data chunk is found by walking the
    /// RIFF chunks, never by assuming a 44-byte header; the header is not measured. A file
    /// of another sample format (24-bit, float) is measured as the PCM16 it decodes to.
    public func holdsSpeech(wav: UnsafeRawBufferPointer) throws(WAVError) -> Bool {
        let layout = try WAVDecoder.parse(wav)
        let data = UnsafeRawBufferPointer(rebasing: wav[layout.dataRange])
        if layout.format.sampleFormat == .s16, Int(bitPattern: data.baseAddress) % MemoryLayout<Int16>.alignment == 0 {
            return holdsSpeech(data.assumingMemoryBound(to: Int16.self))
        }
        return holdsSpeech(WAVDecoder.samples(of: wav, layout: layout))
    }

    /// Whether the WAV file in `wav` holds speech.
    public func holdsSpeech(wav: [UInt8]) throws(WAVError) -> Bool {
        let r = wav.withUnsafeBytes { raw in Result { () throws(WAVError) -> Bool in try holdsSpeech(wav: raw) } }
        return try r.get()
    }
}
