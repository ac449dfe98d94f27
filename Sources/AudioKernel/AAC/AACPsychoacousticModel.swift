import Glibc

/// How much quantization noise each scalefactor band may carry unheard: the encoder's
/// psychoacoustic model, a compact relative of ISO/IEC 14496-3's informative model and
/// Johnston's. Per band (per window group for short windows):
/// - the energy, spread over the Bark scale (27 dB per Bark towards lower bands, 15 towards
///   higher ones), is the masking the band's neighbours give it;
/// - the signal-to-mask offset depends on tonality, from the band's spectral flatness: a tone
///   masks noise poorly (about 14.5 + z dB), noise masks noise well (about 5.5 dB);
/// - the threshold in quiet (Terhardt's curve), with its most sensitive point at the PCM16
///   floor, is the least noise a band is allowed;
/// - bands above the bandwidth the bit rate pays for carry nothing.
/// The rate loop then scales every band's masked allowance by one factor until the frame fits.
final class AACPsychoacousticModel {
    /// One window type's per-band constants at this sample rate.
    struct Layout {
        var bark: [Float] = []
        /// spreading[masker * bands + maskee]
        var spreading: [Float] = []
        /// The least noise per coefficient of each band (the threshold in quiet).
        var quiet: [Float] = []
        /// Bands below this one are coded; the rest are cut by the bandwidth.
        var codedBands = 0
        /// Noise may stand in for noise-like bands from `noiseStart` to below `noiseBands`.
        var noiseStart = 0
        var noiseBands = 0
    }

    let long: Layout
    let short: Layout
    /// The power the masked threshold is raised to (see ``AACEncoder/tuning(bitsPerChannel:sampleRate:)``).
    let compression: Float
    private let spread: UnsafeMutablePointer<Float> = .allocate(capacity: AACICSInfo.maxBands)

    init(sampleRate: Int, bandwidth: Double, compression: Float, noiseFrom: Double, noiseTo: Double, rateIndex: Int) {
        self.compression = compression
        long = Self.layout(offsets: AACTables.longBandOffsets[rateIndex], windowLength: 1024, sampleRate: sampleRate,
                           bandwidth: bandwidth, noiseFrom: noiseFrom, noiseTo: noiseTo)
        short = Self.layout(offsets: AACTables.shortBandOffsets[rateIndex], windowLength: 128, sampleRate: sampleRate,
                            bandwidth: bandwidth, noiseFrom: noiseFrom, noiseTo: noiseTo)
    }

    deinit { spread.deallocate() }

    private static func layout(offsets: [Int16], windowLength: Int, sampleRate: Int, bandwidth: Double,
                               noiseFrom: Double, noiseTo: Double) -> Layout {
        var layout = Layout()
        let bands = offsets.count - 1
        let hzPerBin = Double(sampleRate) / 2 / Double(windowLength)
        // A PCM16 step's white noise, per MDCT coefficient: σ² = 1/12 through Σw²cos² = N/4.
        let floor = Double(windowLength) / 2 / 12
        var minimumDB = Double.infinity
        var quietDB: [Double] = []
        for b in 0..<bands {
            let centre = (Double(offsets[b]) + Double(offsets[b + 1])) / 2 * hzPerBin
            let f = max(centre, 20) / 1_000
            layout.bark.append(Float(13 * atan(0.76 * f) + 3.5 * atan((f / 7.5) * (f / 7.5))))
            let db = 3.64 * pow(f, -0.8) - 6.5 * exp(-0.6 * (f - 3.3) * (f - 3.3)) + 1e-3 * pow(f, 4)
            quietDB.append(min(db, 90))
            minimumDB = min(minimumDB, db)
            if Double(offsets[b]) * hzPerBin < bandwidth { layout.codedBands = b + 1 }
            if Double(offsets[b]) * hzPerBin < noiseTo { layout.noiseBands = b + 1 }
            if Double(offsets[b]) * hzPerBin < noiseFrom { layout.noiseStart = b + 1 }
        }
        layout.quiet = quietDB.map { Float(floor * pow(10, ($0 - minimumDB) / 10)) }
        layout.spreading = [Float](repeating: 0, count: bands * bands)
        for masker in 0..<bands {
            for maskee in 0..<bands {
                let dz = layout.bark[maskee] - layout.bark[masker]
                let db = dz >= 0 ? -15 * dz : 27 * dz
                layout.spreading[masker * bands + maskee] = Float(pow(10, Double(db) / 10))
            }
        }
        return layout
    }

    /// Fills, for each coded band of each group, its energy, the noise its neighbours mask and
    /// the noise too quiet to hear (all summed over the group's windows), indexed group ×
    /// ``AACChannel/groupStride`` + band. The rate loop scales the masked noise, never the
    /// quiet one: bits never go to noise nobody hears.
    /// Energy and tonality (0 noise, 1 tone) go on to the bands noise may stand in for.
    func analyze(_ spectrum: UnsafePointer<Float>, info: AACICSInfo, energy: UnsafeMutablePointer<Float>,
                 allowed: UnsafeMutablePointer<Float>, quiet: UnsafeMutablePointer<Float>, tonality: UnsafeMutablePointer<Float>) {
        let layout = info.isShort ? short : long
        let bands = layout.codedBands
        var window = 0
        for g in 0..<info.groupCount {
            let base = g * AACChannel.groupStride
            let windows = info.groupLengths[g]
            for b in 0..<max(bands, layout.noiseBands) {
                let lower = Int(info.offsets[b]), upper = Int(info.offsets[b + 1])
                var sum: Float = 0, logSum: Float = 0
                for w in window..<(window + windows) {
                    let x = spectrum + w * info.windowLength
                    for k in lower..<upper {
                        let e = x[k] * x[k]
                        sum += e
                        logSum += log2(e + 1e-3)
                    }
                }
                let count = Float((upper - lower) * windows)
                energy[base + b] = sum
                // Spectral flatness in dB: 0 for noise, strongly negative for a tone.
                let flatnessDB = 10 * 0.30103 * (logSum / count - log2(sum / count + 1e-3))
                tonality[base + b] = min(max(flatnessDB / -30, 0), 1)
            }
            for maskee in 0..<bands {
                var s: Float = 0
                for masker in 0..<bands { s += energy[base + masker] * layout.spreading[masker * bands + maskee] }
                spread[maskee] = s
            }
            for b in 0..<bands {
                let tonal = tonality[base + b]
                let offsetDB = tonal * min(14.5 + layout.bark[b], 20) + (1 - tonal) * 5.5
                let width = Float((Int(info.offsets[b + 1]) - Int(info.offsets[b])) * windows)
                let masked = spread[b] * exp2(-offsetDB * 0.33219)
                allowed[base + b] = exp2(compression * log2(max(masked, 1e-9)))
                quiet[base + b] = layout.quiet[b] * width
            }
            window += windows
        }
    }
}
