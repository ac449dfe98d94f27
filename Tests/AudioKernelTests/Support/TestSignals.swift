import Foundation

/// A small deterministic generator (SplitMix64) so random tests repeat exactly.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

enum TestSignals {
    /// Lengths that cover the empty case, single samples, every tail of a 16- and 32-lane
    /// loop, and a long block.
    static let lengths: [Int] = Array(0...70) + [127, 128, 129, 480, 1000, 4097]

    static func randomInt16(_ count: Int, seed: UInt64) -> [Int16] {
        var g = SeededGenerator(seed: seed)
        return (0..<count).map { _ in Int16.random(in: .min ... .max, using: &g) }
    }

    /// Int16 samples that put the extremes at every position of a vector.
    static func edgeInt16(_ count: Int) -> [Int16] {
        let edges: [Int16] = [.min, .max, 0, -1, 1, .min + 1, .max - 1]
        return (0..<count).map { edges[$0 % edges.count] }
    }

    /// A sine tone of the given amplitude and frequency at 24 kHz.
    static func sine(amplitude: Double, frequency: Double, count: Int, sampleRate: Double = 24_000) -> [Int16] {
        (0..<count).map { Int16((amplitude * sin(2 * .pi * frequency * Double($0) / sampleRate)).rounded()) }
    }
}

