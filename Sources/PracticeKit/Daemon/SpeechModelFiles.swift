import AudioKernel
internal import CAudioShim
import COpenSSL
import FoundationEssentials
import SpeechModels

#if canImport(Glibc)
import Glibc
#endif

/// The model files of learned endpointing (`speech.endpoint = model`), as the package installs
/// them from their pinned PyPI wheels (.ci/models.sh), each checked by its sha256 when the
/// daemon starts: a missing, truncated or different file stops the start with an error that
/// names it, before any learner is heard by a model it does not expect.
public enum SpeechModelFiles {
    public static let silero = (name: "silero_vad_op18_ifless.onnx", sha256: "7671cd04b004e9076da0d4a7b1a5aec36adf161c39230c1cb94a4fd5db6bbd28")
    public static let smartTurn = (name: "smart-turn-v3.2-cpu.onnx", sha256: "2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f")
    /// Larger than either file by far: anything bigger is not one (and is not read whole).
    static let largestFile = 32 << 20

    public struct Failure: Error, CustomStringConvertible {
        public let path: String
        public let problem: String
        public var description: String { "\(path): \(problem)" }
    }

    /// Reads a model file (a regular file no larger than ``largestFile``) and checks its digest.
    static func contents(_ directory: String, _ file: (name: String, sha256: String)) throws(Failure) -> [UInt8] {
        let path = directory + "/" + file.name
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw Failure(path: path, problem: "missing (\(String(cString: strerror(errno)))); the package installs it, or set speech.endpoint = hangover")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw Failure(path: path, problem: "not a regular file") }
        guard info.st_size <= largestFile else { throw Failure(path: path, problem: "\(info.st_size) bytes: not the model file") }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Failure(path: path, problem: "unreadable (\(String(cString: strerror(errno))))") }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + done, $0.count - done) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw Failure(path: path, problem: "could not be read whole") }
            done += n
        }
        let digest = sha256(bytes)
        guard digest == file.sha256 else {
            throw Failure(path: path, problem: "sha256 \(digest), expected \(file.sha256) (truncated, damaged or another version)")
        }
        return bytes
    }

    static func sha256(_ bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        _ = bytes.withUnsafeBytes { input in
            EVP_Digest(input.baseAddress, input.count, &digest, &length, EVP_sha256(), nil)
        }
        let hex = Array("0123456789abcdef".utf8)
        return String(decoding: digest.flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 15)]] }, as: UTF8.self)
    }

    /// Checks both files by their digests only (a few milliseconds in any build: OpenSSL
    /// hashes them), without parsing them: what the daemon does before its socket listens.
    public static func verify(directory: String) throws(Failure) {
        _ = try contents(directory, silero)
        _ = try contents(directory, smartTurn)
    }

    /// Both models, checked and loaded, with smart-turn's worker thread started.
    public static func load(directory: String, threads: Int, configuration: TurnEndpointerConfiguration) throws(Failure) -> LearnedEndpointing {
        let endpointing = try loadFiles(directory: directory, threads: threads, configuration: configuration)
        // Loading held the files' bytes and their parsed tensors (about 20 MB) for a moment.
        // Freed, glibc keeps most of it in the heap (its mmap threshold rises to the size of
        // the first large block freed, so the next ones came from the heap): handed back, the
        // daemon's resident memory is what it uses.
        _ = practiced_release_free_memory()
        return endpointing
    }

    /// Hands the heap's free pages back to the system: call it once the models let go are
    /// freed (no reference left), or glibc keeps their 20 MB resident for the next allocation.
    public static func returnFreedMemory() {
        _ = practiced_release_free_memory()
    }

    private static func loadFiles(directory: String, threads: Int, configuration: TurnEndpointerConfiguration) throws(Failure) -> LearnedEndpointing {
        let sileroBytes = try contents(directory, silero)
        let smartTurnBytes = try contents(directory, smartTurn)
        let vad: SileroVAD
        let model: SmartTurnModel
        do { vad = try SileroVAD(onnx: sileroBytes) } catch { throw Failure(path: directory + "/" + silero.name, problem: "\(error)") }
        do { model = try SmartTurnModel(onnx: smartTurnBytes, threads: threads) } catch {
            throw Failure(path: directory + "/" + smartTurn.name, problem: "\(error)")
        }
        do {
            return LearnedEndpointing(vad: vad, worker: try TurnCompletionWorker(model: model), configuration: configuration)
        } catch {
            throw Failure(path: directory, problem: "smart-turn's thread could not start: \(error)")
        }
    }
}
