import AudioKernel
import Dispatch
import FoundationEssentials
import Glibc
import PracticeProtocol
import PracticeSupport

// `cue.play`: a recording of the learner's, downloaded and played through the daemon.
extension CuePractice {
    /// Where a downloaded recording is played from: the learner's voice, removed when the
    /// visit ends (``windDownVisit()``, and at a start after a visit a killed daemon left).
    static func playbackFile(_ stateDirectory: String) -> String { FilePaths.join(stateDirectory, "cue-playback.m4a") }

    /// Downloads a recording (fresh URL from the history) and plays it through `play`, at
    /// `rate` (the same pitch).
    func playRecording(_ id: Int, rate: Double, _ reply: CommandReply<Command.CuePlay>) throws {
        let profile = try profileID()
        let path = Self.playbackFile(stateDirectory)
        let play = play
        call({ client -> Data in
            let history = try await client.history(profileID: profile)
            guard let recording = history.recordings.first(where: { $0.profileCueRecordingId == id }) else {
                throw ChatterboxError.backend(.invalidResponse("no recording \(id) for this learner"))
            }
            guard let url = history.url(of: recording.fileId) else { throw ChatterboxError.backend(.invalidResponse("recording \(id) has no download URL")) }
            return try await client.download(url)
        }) { result in
            switch result {
            case .success(let bytes):
                if let (errno, operation) = bytes.withUnsafeBytes({ SystemCall.writeFileAtomically($0, to: path, mode: 0o600, sync: false) }) {
                    return reply.fail(ControlError(.fileError, "\(operation): \(errno)"))
                }
                play(path, rate) { reply($0.map { .init(recordingId: id, durationS: ($0 / rate * 1000).rounded() / 1000, rate: rate) }) }
            case .failure(let error):
                reply.fail(error)
            }
        }
    }
}
