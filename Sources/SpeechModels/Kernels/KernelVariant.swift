import CSpeechKernels
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which build of the models' integer inner loops runs (issue 70): the portable Swift
/// kernels (baseline x86-64's `pmaddwd`, NEON's widening multiply-adds), or a C variant for
/// an instruction set the baseline lacks (`CSpeechKernels`). Chosen once, the first time a
/// model multiplies: the best the CPU and its kernel support, unless
/// `PRACTICED_SPEECH_KERNELS` names another (tests run every variant the host can; a kiosk
/// whose CPU misreports its features can be held to the portable kernels). Every variant
/// gives the portable kernels' result to the bit: the sums are exact integers.
public enum KernelVariant: String, CaseIterable, Sendable {
    case portable
    case avx2
    case avxVNNI = "avx-vnni"
    case avx512VNNI = "avx512-vnni"

    var code: Int32 {
        switch self {
        case .portable: Int32(PRACTICED_KERNELS_PORTABLE)
        case .avx2: Int32(PRACTICED_KERNELS_AVX2)
        case .avxVNNI: Int32(PRACTICED_KERNELS_AVX_VNNI)
        case .avx512VNNI: Int32(PRACTICED_KERNELS_AVX512_VNNI)
        }
    }

    /// Whether this CPU (and the OS's saved register state) runs it.
    public var isSupported: Bool { practiced_kernels_supported(code) != 0 }

    /// The variants this host runs, portable first.
    public static var supported: [KernelVariant] { allCases.filter(\.isSupported) }

    /// The fastest this host runs: the widest registers, then VNNI's fused multiply-add.
    public static var best: KernelVariant { supported.last ?? .portable }

    /// The variant in use (its ``code``; -1 until chosen). Read at every product: a load
    /// and a switch, nothing that allocates (`allCases` would).
    private static let chosen = Atomic<Int32>(-1)

    /// The variant the models' products run on.
    public static var current: KernelVariant {
        switch chosen.load(ordering: .relaxed) {
        case KernelVariant.avx2.code: return .avx2
        case KernelVariant.avxVNNI.code: return .avxVNNI
        case KernelVariant.avx512VNNI.code: return .avx512VNNI
        case KernelVariant.portable.code: return .portable
        default:
            let variant = (try? named(environmentOverride)) ?? best
            chosen.store(variant.code, ordering: .relaxed)
            return variant
        }
    }

    /// Runs the models on `variant` from now on; refused (and nothing changed) when the host
    /// cannot run it.
    public static func use(_ variant: KernelVariant) throws(Unavailable) {
        guard variant.isSupported else { throw Unavailable("the \(variant.rawValue) kernels do not run on this CPU (it runs \(supported.map(\.rawValue).joined(separator: ", ")))") }
        chosen.store(variant.code, ordering: .relaxed)
    }

    /// `name` (`auto` for ``best``), as `PRACTICED_SPEECH_KERNELS` or a command line gives it.
    public static func named(_ name: String?) throws(Unavailable) -> KernelVariant {
        guard let name, !name.isEmpty, name != "auto" else { return best }
        guard let variant = KernelVariant(rawValue: name) else {
            throw Unavailable("unknown kernels '\(name)': auto, \(allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard variant.isSupported else { throw Unavailable("the \(name) kernels do not run on this CPU") }
        return variant
    }

    /// A variant asked for that this host cannot run, or a name that is none.
    public struct Unavailable: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    private static var environmentOverride: String? {
        guard let value = getenv("PRACTICED_SPEECH_KERNELS") else { return nil }
        return String(cString: value)
    }
}
