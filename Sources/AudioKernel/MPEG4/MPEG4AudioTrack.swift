/// The AAC track of an MPEG-4 file: its configuration, where each frame lies in the file,
/// and which of the decoded samples are presented (the edit list).
public struct MPEG4AudioTrack: Equatable, Sendable {
    /// One coded frame: its byte range in the file.
    public struct Frame: Equatable, Sendable {
        public var offset: Int
        public var size: Int
    }

    public var config: AudioSpecificConfig
    /// The media's timescale (ticks per second; the sample rate in files from encoders).
    public var timescale: Int
    public var frames: [Frame]
    /// The media's duration, in its timescale (the sum of the samples' durations).
    public var mediaDuration: Int
    /// The first presented sample, in the media's timescale: the encoder's priming.
    public var presentationStart: Int
    /// How many samples are presented from there, in the media's timescale.
    public var presentationLength: Int

    /// The presented duration in seconds.
    public var duration: Double { Double(presentationLength) / Double(timescale) }
}
