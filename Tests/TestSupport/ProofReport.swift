import Foundation

/// The file `.ci/proof` keeps a run's figures in (`PRACTICED_PROOF_REPORT`, `.build/proof/<run>.txt`).
public enum ProofReport {
    /// Appends `line` to the report, when the run has one.
    public static func append(_ line: String) {
        guard let path = ProcessInfo.processInfo.environment["PRACTICED_PROOF_REPORT"],
              let handle = FileHandle(forWritingAtPath: path) ?? (FileManager.default.createFile(atPath: path, contents: nil) ? FileHandle(forWritingAtPath: path) : nil)
        else { return }
        handle.seekToEndOfFile()
        handle.write(Data((line + "\n").utf8))
        try? handle.close()
    }
}
