import FoundationEssentials
import Glibc

/// A polyphase windowed-sinc stage between any two rates: the direct converter when a ratio
/// has no factor of two to split off, and the short fractional stage beside a half-band one.
///
/// The output's position in the input advances by exactly `inputRate / outputRate`, counted
/// in integers (no drift over hours). When the reduced ratio has at most
/// ``maximumExactPhases`` phases each phase has its own coefficients; otherwise
/// ``interpolatedPhases`` are tabulated and adjacent ones blended linearly.
final class PolyphaseStage: ResamplingStage {
    static let maximumExactPhases = 4_096
    static let interpolatedPhases = 512

    let channels: Int
    let maximumInputFrames: Int
    let inputRate: Int
    let outputRate: Int
    /// Taps per phase, a multiple of 4.
    let taps: Int
    let phases: Int
    let exact: Bool
    /// Each output advances the input by `stepWhole + stepFraction / denominator` frames.
    private let stepWhole: Int
    private let stepFraction: Int
    private let denominator: Int
    /// `phases` (+1 when interpolated) sets of `taps` coefficients, each reversed so that it
    /// meets the history in ascending order. Exact mode stores them in the order the outputs
    /// use them: the phases repeat every `phases` outputs, and output `c` of the cycle has
    /// phase `c · reducedIn mod phases` and then moves the input on by `advances[c]` frames.
    private let coefficients: UnsafeMutablePointer<Float>
    private let advances: UnsafeMutablePointer<Int>
    /// Exact mode, per cycle position `c`: how far the next four outputs' newest frames lie
    /// from output `c`'s (`reach[4c] = advances[c]`, then running sums; `reach[4c + 3]` is
    /// where the group after them starts). The table also repeats its first three sets
    /// after the last, so that a group of four reads four consecutive sets.
    private let reach: UnsafeMutablePointer<Int>
    /// Exact mode: where the next output is in the cycle.
    private var cycle = 0
    /// One line per channel: `taps − 1` frames of the past, then the new input.
    private let history: UnsafeMutablePointer<Float>
    private let lineCapacity: Int
    private var count = 0
    /// The newest frame the next output uses, and where between it and the next the output
    /// lies: `numerator / denominator`.
    private var newest = 0
    private var numerator = 0

    /// - Parameters:
    ///   - passband, stopband: the filter's edges in Hz; everything the input holds between
    ///     the stopband and `inputRate / 2`, and every image of the input from the stopband
    ///     up, is attenuated by at least `attenuation` dB.
    init(inputRate: Int, outputRate: Int, channels: Int, passband: Double, stopband: Double, attenuation: Double, maximumInputFrames: Int) {
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.channels = channels
        self.maximumInputFrames = max(1, maximumInputFrames)
        let divisor = Self.gcd(inputRate, outputRate)
        let reducedIn = inputRate / divisor, reducedOut = outputRate / divisor
        exact = reducedOut <= Self.maximumExactPhases
        phases = exact ? reducedOut : Self.interpolatedPhases
        denominator = exact ? reducedOut : outputRate
        let increment = exact ? reducedIn : inputRate
        stepWhole = increment / denominator
        stepFraction = increment % denominator

        // In cycles per input sample:
        let cutoff = (passband + stopband) / 2 / Double(inputRate)
        let transition = (stopband - passband) / Double(inputRate)
        let length = Int(KaiserDesign.order(attenuation: attenuation, transition: transition).rounded(.up)) + 1
        taps = max(8, (length + 3) / 4 * 4)

        let sets = exact ? phases + 3 : phases + 1
        // Aligned, so that a coefficient load folds into its multiply (`taps` is a multiple of 4).
        coefficients = UnsafeMutableRawPointer.allocate(byteCount: sets * taps * MemoryLayout<Float>.stride, alignment: 64)
            .bindMemory(to: Float.self, capacity: sets * taps)
        // The taps were rounded up to a multiple of 4: the window gets the attenuation that
        // length buys over the same transition.
        let bought = 7.95 + 2.285 * 2 * Double.pi * transition * Double(taps - 1)
        let beta = KaiserDesign.beta(attenuation: max(attenuation, min(bought, attenuation + 20)))
        let (isExact, count) = (exact, phases)
        let order = (0..<sets).map { isExact ? ($0 % count) * reducedIn % count : $0 }
        Self.design(into: coefficients, order: order, phases: phases, taps: taps, cutoff: cutoff, beta: beta)
        advances = .allocate(capacity: phases)
        for position in 0..<phases {
            advances[position] = exact ? ((position * reducedIn) % phases + reducedIn) / phases : 0
        }
        reach = .allocate(capacity: 4 * phases)
        for position in 0..<phases {
            var sum = 0
            for step in 0..<4 {
                sum += advances[(position + step) % phases]
                reach[4 * position + step] = sum
            }
        }
        lineCapacity = taps - 1 + self.maximumInputFrames
        history = .allocate(capacity: lineCapacity * channels)
        reset()
    }

    deinit {
        coefficients.deallocate()
        advances.deallocate()
        reach.deallocate()
        history.deallocate()
    }

    /// Half the filter, in output frames.
    var delay: Double { Double(taps / 2) * Double(outputRate) / Double(inputRate) }

    func maximumOutputFrames(forInputFrames inputFrames: Int) -> Int {
        Int((Double(inputFrames) * Double(outputRate) / Double(inputRate)).rounded(.up)) + 2
    }

    func minimumOutputFrames(forInputFrames inputFrames: Int) -> Int {
        max(0, inputFrames * outputRate / inputRate - 1)
    }

    func reset() {
        history.initialize(repeating: 0, count: lineCapacity * channels)
        count = taps - 1
        newest = taps - 1
        numerator = 0
        cycle = 0
    }

    func inputSlot(frames: Int) -> (slot: UnsafeMutablePointer<Float>, channelStride: Int) {
        precondition(count + frames <= lineCapacity, "more input than the resampler was made for")
        return (history + count, lineCapacity)
    }

    func commit(_ frames: Int) { count += frames }

    func run(into output: UnsafeMutablePointer<Float>, channelStride: Int) -> Int {
        let produced = exact ? runExact(into: output, channelStride: channelStride) : runInterpolated(into: output, channelStride: channelStride)
        // Keep the `taps − 1` frames before the newest one. (An output never advances more
        // than `inputRate / outputRate` + 1 frames, fewer than `taps − 1` for every stage
        // the resampler builds, so those frames have all arrived.)
        let keepFrom = newest - (taps - 1)
        if keepFrom > 0 {
            Self.drop(keepFrom, keeping: count - keepFrom, lines: channels, from: history, stride: lineCapacity)
            count -= keepFrom
            newest -= keepFrom
        }
        return produced
    }

    /// Four outputs at a time while the input reaches (four dot products in four-lane
    /// accumulators, summed across by one transpose: a horizontal sum per output would cost
    /// as much as a short filter), then the last ones one at a time.
    private func runExact(into output: UnsafeMutablePointer<Float>, channelStride: Int) -> Int {
        let lines = UnsafePointer(history - (taps - 1))
        var cursor = Cursor(newest: newest, cycle: cycle, produced: 0)
        let table = Table(sets: coefficients, taps: taps, phases: phases, reach: reach)
        switch channels {
        case 1:
            // The wide stage's tap counts (16 at `.medium`, 20 at `.high`) as constants: the
            // tap loop unrolls, a fifth of the instructions of a group.
            switch taps {
            case 16: Self.groups(mono: lines, count: count, table: table, taps: 16, cursor: &cursor, into: output)
            case 20: Self.groups(mono: lines, count: count, table: table, taps: 20, cursor: &cursor, into: output)
            default: Self.groups(mono: lines, count: count, table: table, taps: taps, cursor: &cursor, into: output)
            }
        case 2: Self.groups(left: lines, right: lines + lineCapacity, count: count, table: table, cursor: &cursor, into: output, channelStride: channelStride)
        default:
            Self.groups(lines: lines, channels: channels, lineCapacity: lineCapacity, count: count, table: table, cursor: &cursor,
                        into: output, channelStride: channelStride)
        }
        // A group whose last output lies past the input is never followed by one that fits.
        var set = UnsafePointer(coefficients + cursor.cycle &* taps)
        while cursor.newest < count {
            for channel in 0..<channels {
                output[channel &* channelStride &+ cursor.produced] = Self.dot(set, lines + (channel &* lineCapacity &+ cursor.newest), taps)
            }
            cursor.produced &+= 1
            cursor.newest &+= advances[cursor.cycle]
            cursor.cycle &+= 1
            set += taps
            if cursor.cycle == phases {
                cursor.cycle = 0
                set -= phases &* taps
            }
        }
        newest = cursor.newest
        cycle = cursor.cycle
        return cursor.produced
    }

    /// Where the next output is: its newest input frame, its place in the cycle, and how
    /// many outputs this run has made.
    private struct Cursor {
        var newest: Int
        var cycle: Int
        var produced: Int
    }

    /// The exact mode's tables, passed whole to the loops (so that they stay in registers,
    /// not reloaded through `self`).
    private struct Table {
        let sets: UnsafePointer<Float>
        let taps: Int
        let phases: Int
        let reach: UnsafePointer<Int>

        init(sets: UnsafeMutablePointer<Float>, taps: Int, phases: Int, reach: UnsafeMutablePointer<Int>) {
            self.sets = UnsafePointer(sets)
            self.taps = taps
            self.phases = phases
            self.reach = UnsafePointer(reach)
        }
    }

    /// Where the next group of four outputs is: its first output's newest frame and place in
    /// the cycle, with its four coefficient sets and its row of `reach`, moved on together
    /// (no multiply per group).
    private struct Walk {
        var newest: Int
        var cycle: Int
        var set: UnsafePointer<Float>
        var to: UnsafePointer<Int>
        let taps: Int
        let phases: Int

        @inline(__always)
        init(_ table: Table, taps: Int, from cursor: Cursor) {
            newest = cursor.newest
            cycle = cursor.cycle
            set = table.sets + cursor.cycle &* taps
            to = table.reach + 4 &* cursor.cycle
            self.taps = taps
            phases = table.phases
        }

        /// The newest frame of the group's last output: the group is whole when it is here.
        @inline(__always)
        var last: Int { newest &+ to[2] }

        /// The newest frames of the group's second and third outputs.
        @inline(__always)
        var middle: (Int, Int) { (newest &+ to[0], newest &+ to[1]) }

        /// Output `i`'s coefficients.
        @inline(__always)
        func set(_ i: Int) -> UnsafePointer<Float> { set + i &* taps }

        @inline(__always)
        mutating func advance() {
            newest &+= to[3]
            cycle &+= 4
            set += 4 &* taps
            to += 16
            while cycle >= phases {
                cycle &-= phases
                set -= phases &* taps
                to -= 4 &* phases
            }
        }
    }

    /// Whole groups of four outputs for one channel, straight into `output`.
    @inline(__always)
    private static func groups(mono line: UnsafePointer<Float>, count: Int, table: Table, taps: Int, cursor: inout Cursor, into output: UnsafeMutablePointer<Float>) {
        var walk = Walk(table, taps: taps, from: cursor)
        var out = UnsafeMutableRawPointer(output + cursor.produced)
        while true {
            let n3 = walk.last
            if n3 >= count { break }
            let (n1, n2) = walk.middle
            let (a, b, c, d) = dot4(walk.set(0), line + walk.newest, walk.set(1), line + n1, walk.set(2), line + n2, walk.set(3), line + n3, taps)
            out.storeBytes(of: transposeSumApart(a, b, c, d), as: SIMD4<Float>.self)
            out += 16
            walk.advance()
        }
        cursor = Cursor(newest: walk.newest, cycle: walk.cycle, produced: (out - UnsafeMutableRawPointer(output)) / 4)
    }

    /// Runs `body` on every whole group of four outputs whose input is here, with the four
    /// outputs' newest frames, the walk (for their coefficients) and the outputs made before
    /// the group; then moves the cursor past them. (The mono loop, the hottest, keeps its own:
    /// through a closure it measured up to 2 % slower.)
    @inline(__always)
    private static func forEachGroup(_ table: Table, count: Int, cursor: inout Cursor, _ body: ((Int, Int, Int, Int), Walk, Int) -> Void) {
        var walk = Walk(table, taps: table.taps, from: cursor)
        var produced = cursor.produced
        while true {
            let n3 = walk.last
            if n3 >= count { break }
            let (n1, n2) = walk.middle
            body((walk.newest, n1, n2, n3), walk, produced)
            produced &+= 4
            walk.advance()
        }
        cursor = Cursor(newest: walk.newest, cycle: walk.cycle, produced: produced)
    }

    /// Whole groups of four outputs for two channels, each coefficient loaded once for both.
    private static func groups(left: UnsafePointer<Float>, right: UnsafePointer<Float>, count: Int, table: Table, cursor: inout Cursor,
                               into output: UnsafeMutablePointer<Float>, channelStride: Int) {
        forEachGroup(table, count: count, cursor: &cursor) { n, walk, produced in
            let (l, r) = dot4x2(walk.set(0), walk.set(1), walk.set(2), walk.set(3), left, right, n.0, n.1, n.2, n.3, table.taps)
            UnsafeMutableRawPointer(output + produced).storeBytes(of: transposeSum(l.0, l.1, l.2, l.3), as: SIMD4<Float>.self)
            UnsafeMutableRawPointer(output + (channelStride &+ produced)).storeBytes(of: transposeSum(r.0, r.1, r.2, r.3), as: SIMD4<Float>.self)
        }
    }

    /// Whole groups of four outputs for three to eight channels, one channel at a time.
    private static func groups(lines: UnsafePointer<Float>, channels: Int, lineCapacity: Int, count: Int, table: Table, cursor: inout Cursor,
                               into output: UnsafeMutablePointer<Float>, channelStride: Int) {
        forEachGroup(table, count: count, cursor: &cursor) { n, walk, produced in
            for channel in 0..<channels {
                let line = lines + channel &* lineCapacity
                let (a, b, c, d) = dot4(walk.set(0), line + n.0, walk.set(1), line + n.1, walk.set(2), line + n.2, walk.set(3), line + n.3, table.taps)
                UnsafeMutableRawPointer(output + (channel &* channelStride &+ produced)).storeBytes(of: transposeSum(a, b, c, d), as: SIMD4<Float>.self)
            }
        }
    }

    private func runInterpolated(into output: UnsafeMutablePointer<Float>, channelStride: Int) -> Int {
        var produced = 0
        let span = taps - 1
        while newest < count {
            // The position between two tabulated phases, blended linearly.
            let position = Double(numerator) / Double(denominator) * Double(phases)
            let index = min(Int(position), phases - 1)
            let weight = Float(position - Double(index))
            let lowerSet = coefficients + index * taps, upperSet = lowerSet + taps
            for channel in 0..<channels {
                let past = history + (channel &* lineCapacity &+ newest &- span)
                let a = Self.dot(lowerSet, past, taps), b = Self.dot(upperSet, past, taps)
                output[channel &* channelStride &+ produced] = a + (b - a) * weight
            }
            // No division per output: the step is split into whole frames and a fraction.
            newest &+= stepWhole
            numerator &+= stepFraction
            if numerator >= denominator {
                numerator &-= denominator
                newest &+= 1
            }
            produced &+= 1
        }
        return produced
    }

    /// The windowed-sinc coefficients, in the sets' `order`. Phase `p` serves outputs that lie `p / phases` of an
    /// input frame after the newest frame they use: tap `j` (applied to the frame `j`
    /// before the newest) is the kernel at `j + p / phases − taps / 2` input frames. Each
    /// set is scaled to a DC gain of exactly 1 and stored reversed.
    private static func design(into table: UnsafeMutablePointer<Float>, order: [Int], phases: Int, taps: Int, cutoff: Double, beta: Double) {
        let half = Double(taps / 2)
        var row = [Double](repeating: 0, count: taps)
        for (set, phase) in order.enumerated() {
            let fraction = Double(phase) / Double(phases)
            var sum = 0.0
            for tap in 0..<taps {
                let t = Double(tap) + fraction - half
                let window = abs(t / half) >= 1 ? 0 : KaiserDesign.window(t, half: half, beta: beta)
                row[tap] = 2 * cutoff * KaiserDesign.sinc(2 * cutoff * t) * window
                sum += row[tap]
            }
            for tap in 0..<taps { table[set * taps + (taps - 1 - tap)] = Float(row[tap] / sum) }
        }
    }

    static func gcd(_ a: Int, _ b: Int) -> Int {
        var (a, b) = (a, b)
        while b != 0 { (a, b) = (b, a % b) }
        return a
    }
}
