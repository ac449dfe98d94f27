import AudioKernel
import Dispatch
import FoundationEssentials
import Glibc

// An answer's walk (flows.md §4): spooled as AAC-LC → upload intent → PUT to its URL →
// completion → its recording found in the history → transcription, then evaluation,
// followed until ready. One answer uploads at a time, oldest first; each step is an event.
extension CuePractice {
    /// Spools a gated answer (AAC-LC at `cue.bitrate`), then queues it for upload.
    func keep(_ turn: RecordedTurn, cue: Int) {
        guard let profile = learner.profileId else {
            return publish(Event.CueSpoolFailed(cueId: cue, message: "signed out while recording: the answer has no learner"))
        }
        let answer = SpooledAnswer(id: UUID().uuidString.lowercased(), cueId: cue, profileId: profile, recordedAt: Date().timeIntervalSince1970,
                                   durationS: rounded(turn.duration))
        guard let spool else {
            return publish(Event.CueSpoolFailed(cueId: cue, message: "no spool: the answer is not kept (see the log)"))
        }
        do {
            let stored = try spool.store(turn, answer: answer, bitRate: settings.bitRate)
            metrics.increment(.cueAnswers, "spooled")
            publish(Event.CueSpooled(answerId: stored.id, cueId: cue, bytes: stored.bytes, durationS: stored.durationS))
            pump()
        } catch {
            logger.error("cue answer not kept: \(error)")
            publish(Event.CueSpoolFailed(cueId: cue, message: "\(error)"))
        }
    }

    /// Starts the next upload when none runs and a learner is signed in.
    func pump() {
        guard uploading == nil, client().isSignedIn, let next = pending.first(where: { !refused.contains($0.id) }) else { return }
        uploading = next.id
        let client = client()
        Task { [self] in
            let outcome = await walk(next, client: client)
            queue.async { [self] in finished(next, outcome) }
        }
    }

    private enum Outcome: Sendable {
        case uploaded(recordingID: Int)
        case failed(ChatterboxError)
        /// Its audio does not match its record: never uploaded, set aside.
        case damaged(SpoolError)
    }

    /// The walk of one answer; events on the way. It runs as a task: each touch of the spool
    /// hops to the queue, which owns it.
    private func walk(_ original: SpooledAnswer, client: ChatterboxClient) async -> Outcome {
        var answer = original
        do throws(ChatterboxError) {
            if answer.uploadedIntentId == nil {
                // A fresh intent each time (its URL lives 900 s); a 409 means another intent
                // for this cue in this second: one second later, again.
                let intent = try await client.createUploadIntent(profileID: answer.profileId, cueID: answer.cueId)
                publish(Event.CueUploadStep(answerId: answer.id, cueId: answer.cueId, step: .intent))
                guard let url = intent.uploadUrl else { throw .backend(.invalidResponse("an upload intent without an upload_url")) }
                let current = answer
                let read: Result<Data, SpoolError> = await onQueue { [self] in
                    guard let spool else { return .failure(SpoolError(path: current.id, operation: "read", errno: nil)) }
                    return Result { () throws(SpoolError) in try spool.audio(current) }
                }
                let bytes: Data
                switch read {
                case .success(let audio): bytes = audio
                case .failure(let error) where error.isDamaged: return .damaged(error)
                case .failure(let error): throw .backend(.invalidResponse("the spooled answer cannot be read: \(error)"))
                }
                try await client.upload(bytes, to: url)
                publish(Event.CueUploadStep(answerId: answer.id, cueId: answer.cueId, step: .put))
                answer.uploadedIntentId = intent.uploadIntentId
                // Completion alone is left: kept, so that a restart completes rather than uploads again.
                let progressed = answer
                await onQueue { [self] in
                    do { try spool?.update(progressed) } catch { logger.error("cue answer \(progressed.id): its upload's progress not kept: \(error)") }
                }
            }
            let completed = try await client.completeUpload(intentID: answer.uploadedIntentId!, seconds: answer.durationS)
            publish(Event.CueUploadStep(answerId: answer.id, cueId: answer.cueId, step: .complete))
            guard let file = completed.file?.fileId else { throw .backend(.invalidResponse("a completed upload without its file")) }
            // The cue's recordings, not the whole history: bounded by what this cue has.
            let detail = try await client.cue(profileID: answer.profileId, cueID: answer.cueId)
            guard let recording = detail.cue.recordings?.first(where: { $0.fileId == file }) else {
                throw .backend(.invalidResponse("the completed upload's file \(file) is in no recording of cue \(answer.cueId)"))
            }
            publish(Event.CueUploadStep(answerId: answer.id, cueId: answer.cueId, step: .found))
            return .uploaded(recordingID: recording.profileCueRecordingId)
        } catch {
            // Progress made (the PUT) is in the spool's record already (``CueSpool/update(_:)``).
            return .failed(error)
        }
    }

    private func finished(_ answer: SpooledAnswer, _ outcome: Outcome) {
        uploading = nil
        switch outcome {
        case .uploaded(let recordingID):
            uploadAttempt = 0
            lastError[answer.id] = nil
            spool?.remove(answer.id)
            metrics.increment(.cueAnswers, "uploaded")
            logger.info("cue answer \(answer.id) is recording \(recordingID)")
            publish(Event.CueUploaded(answerId: answer.id, cueId: answer.cueId, recordingId: recordingID))
            watch(recordingID, cue: answer.cueId)
            pump()
        case .damaged(let error):
            uploadAttempt = 0
            lastError[answer.id] = nil
            if let entry = spool?.setAside(answer.id, reason: "its audio is damaged: \(error.detail ?? "")") { told(entry) }
            publish(Event.CueUploadFailed(answerId: answer.id, cueId: answer.cueId, reason: "damaged", error: "\(error)"))
            pump()
        case .failed(let error):
            lastError[answer.id] = "\(error)"
            if case .signInRequired(let why) = error {
                signedOut(reason: why)
                publish(Event.CueUploadFailed(answerId: answer.id, cueId: answer.cueId, reason: "sign_in_required", error: "\(error)"))
            } else if error.isTransient {
                uploadAttempt += 1
                let delay = error.isDuplicateIntent ? 1 : min(settings.maximumRetryDelay, pow(2, Double(uploadAttempt - 1)))
                logger.info("cue answer \(answer.id): \(error); again in \(delay) s")
                publish(Event.CueUploadRetrying(answerId: answer.id, attempt: uploadAttempt, delayS: delay, error: "\(error)"))
                queue.asyncAfter(deadline: .now() + delay) { [self] in pump() }
            } else {
                logger.error("cue answer \(answer.id) refused: \(error); kept in \(spool?.directory ?? "memory") until the next start")
                refused.insert(answer.id)
                publish(Event.CueUploadFailed(answerId: answer.id, cueId: answer.cueId, reason: error.reason, error: "\(error)"))
                pump()
            }
        }
    }

    // MARK: - Results

    /// Follows a recording's transcript, then its evaluation, until ready (events on the
    /// way); a fall back to `none` asks again, `cue.result_attempts` times in all.
    func watch(_ recordingID: Int, cue: Int) {
        guard let profile = learner.profileId, !watching.contains(recordingID) else { return }
        watching.insert(recordingID)
        let client = client(), settings = settings
        Task { [self] in
            for step in [Event.CueResultsFailed.Step.transcription, .evaluation] {
                let failure = await follow(step, recordingID, cue: cue, profile: profile, client: client, settings: settings)
                if let failure {
                    publish(failure)
                    break
                }
            }
            queue.async { [self] in _ = watching.remove(recordingID) }
        }
    }

    /// One step followed to `ready`; the failure to tell otherwise.
    private func follow(_ step: Event.CueResultsFailed.Step, _ id: Int, cue: Int, profile: Int, client: ChatterboxClient,
                        settings: CueSettings) async -> Event.CueResultsFailed? {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(settings.resultTimeout * 1e9)
        var attempts = 0, told = CueResultStatus.none
        while attempts < settings.resultAttempts {
            attempts += 1
            do {
                let asked = step == .transcription ? try await client.requestTranscription(recordingID: id) : try await client.requestEvaluation(recordingID: id)
                if asked.status == "transcript_not_ready" { return .init(recordingId: id, step: step, attempts: attempts, error: "no transcript yet") }
                var sawProcessing = false, quietPolls = 0
                while DispatchTime.now().uptimeNanoseconds < deadline {
                    // Polled through the cue (its own recordings), not the learner's whole history.
                    let detail = try await client.cue(profileID: profile, cueID: cue)
                    guard let recording = detail.cue.recordings?.first(where: { $0.profileCueRecordingId == id }) else {
                        return .init(recordingId: id, step: step, attempts: attempts, error: "the recording is not among cue \(cue)'s")
                    }
                    let report = recording.report
                    let status = CueResultStatus(rawValue: step == .transcription ? report.status : report.evaluation.status) ?? .none
                    if status != told {
                        told = status
                        if step == .transcription {
                            publish(Event.CueTranscript(recordingId: id, status: status, transcript: status == .ready ? report.transcript : nil))
                        } else {
                            publish(Event.CueEvaluation(recordingId: id, status: status, evaluation: status == .ready ? report.evaluation.result : nil))
                        }
                    }
                    if status == .ready { return nil }
                    if status == .processing { sawProcessing = true }
                    // Back to none after processing (or none for a while): it failed; ask again.
                    if status == .none { quietPolls += 1 }
                    if status == .none && (sawProcessing || quietPolls >= 3) { break }
                    try await Task.sleep(nanoseconds: UInt64(settings.pollInterval * 1e9))
                }
                if DispatchTime.now().uptimeNanoseconds >= deadline {
                    return .init(recordingId: id, step: step, attempts: attempts, error: "not ready within \(Int(settings.resultTimeout)) s")
                }
            } catch let error as ChatterboxError {
                if case .signInRequired = error { queue.async { [self] in signedOut(reason: "\(error)") } }
                guard error.isTransient else { return .init(recordingId: id, step: step, attempts: attempts, error: "\(error)") }
                try? await Task.sleep(nanoseconds: UInt64(settings.pollInterval * 1e9))
            } catch {
                return .init(recordingId: id, step: step, attempts: attempts, error: "\(error)")
            }
        }
        return .init(recordingId: id, step: step, attempts: attempts, error: "fell back to none each time")
    }

    // MARK: - Playing a recording

    /// Downloads a recording (fresh URL from the history) and plays it through `play`.
    func playRecording(_ id: Int, _ reply: CommandReply<Command.CuePlay>) throws {
        let profile = try profileID()
        let path = FilePaths.join(stateDirectory, "cue-playback.m4a")
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
                play(path) { reply($0.map { .init(recordingId: id, durationS: $0) }) }
            case .failure(let error):
                reply.fail(error)
            }
        }
    }
}
