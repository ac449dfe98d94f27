import Foundation

/// How well a sample-rate converter keeps a tone clean: a tone at `tone` Hz (amplitude 0.5)
/// goes through `convert` in 480-frame blocks; after the first `skip` output frames,
/// 16,384 frames are analysed, and the loudest component other than the tone, in dB
/// relative to it, is the converter's rejection (an image, an alias, or noise).
public enum ConverterProbe {
    public static func worstSpur(inputRate: Int, outputRate: Int, tone: Double, skip: Int = 4_096,
                                 convert: ([Float]) -> [Float]) -> (level: Double, frequency: Double) {
        spectrum(inputRate: inputRate, outputRate: outputRate, tone: tone, skip: skip, convert: convert).worstSpur(excluding: tone)
    }

    /// The passband ripple, in dB: the spread of the gains a converter gives tones from 0.05
    /// to `edge` × the lower Nyquist frequency, in steps of 0.05 (each through a fresh
    /// converter from `make`, amplitude 0.5, measured as `worstSpur` measures).
    public static func passbandRipple(inputRate: Int, outputRate: Int, edge: Double = 0.9, skip: Int = 4_096,
                                      make: () -> ([Float]) -> [Float]) -> Double {
        let nyquist = Double(min(inputRate, outputRate)) / 2
        var gains: [Double] = []
        for fraction in stride(from: 0.05, through: edge + 1e-9, by: 0.05) {
            let tone = fraction * nyquist
            let spectrum = spectrum(inputRate: inputRate, outputRate: outputRate, tone: tone, skip: skip, convert: make())
            gains.append(20 * log10(spectrum.amplitude(at: tone) / 0.5))
        }
        return gains.max()! - gains.min()!
    }

    private static func spectrum(inputRate: Int, outputRate: Int, tone: Double, skip: Int, convert: ([Float]) -> [Float]) -> Spectrum {
        var output: [Float] = []
        var frame = 0
        while output.count < skip + 16_384 {
            let block = (0..<480).map { Float(0.5 * sin(2 * Double.pi * tone * Double(frame + $0) / Double(inputRate))) }
            frame += 480
            output += convert(block)
        }
        return Spectrum(output[skip..<(skip + 16_384)].map(Double.init), rate: Double(outputRate))
    }
}
