import Foundation

/// How well a sample-rate converter keeps a tone clean: a tone at `tone` Hz (amplitude 0.5)
/// goes through `convert` in 480-frame blocks; after the first `skip` output frames,
/// 16,384 frames are analysed, and the loudest component other than the tone, in dB
/// relative to it, is the converter's rejection (an image, an alias, or noise).
public enum ConverterProbe {
    public static func worstSpur(inputRate: Int, outputRate: Int, tone: Double, skip: Int = 4_096,
                                 convert: ([Float]) -> [Float]) -> (level: Double, frequency: Double) {
        var output: [Float] = []
        var frame = 0
        while output.count < skip + 16_384 {
            let block = (0..<480).map { Float(0.5 * sin(2 * Double.pi * tone * Double(frame + $0) / Double(inputRate))) }
            frame += 480
            output += convert(block)
        }
        let spectrum = Spectrum(output[skip..<(skip + 16_384)].map(Double.init), rate: Double(outputRate))
        return spectrum.worstSpur(excluding: tone)
    }
}
