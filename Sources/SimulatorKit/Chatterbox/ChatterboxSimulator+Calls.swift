import Foundation
import PracticeKit
import PracticeNet

// The gateway's RPC functions, as chatterbox's SQL answers them (flows.md §3).
extension ChatterboxSimulator {
    /// The keys each function takes (all required but the optional ones) and whether it
    /// needs a learner's token.
    private static let functions: [String: (keys: Set<String>, optional: Set<String>, authorized: Bool)] = [
        "app_config": ([], [], false),
        "request_login_code": (["identifier"], [], false),
        "login_with_code": (["identifier", "code"], [], false),
        "request_magic_link": (["identifier"], [], false),
        "login_with_magic_token": (["token"], [], false),
        "refresh_tokens": (["refresh_token"], [], false),
        "me": ([], [], true),
        "set_active_profile": (["account_id", "language_code"], [], true),
        "get_cues": (["profile_id", "count"], [], true),
        "shuffle_cues": (["profile_id", "count"], [], true),
        "get_cue_for_profile": (["profile_id", "cue_id"], [], true),
        "get_profile_recording_history": (["profile_id"], [], true),
        "create_recording_upload_intent": (["profile_id", "cue_id", "mime_type"], [], true),
        "complete_recording_upload": (["upload_intent_id"], ["metadata"], true),
        "request_recording_transcription": (["profile_cue_recording_id"], [], true),
        "request_recording_evaluation": (["profile_cue_recording_id"], [], true),
        // For creator accounts: a learner's call is refused (trace 43).
        "update_cue_stage": (["cue_id", "stage"], [], true),
    ]

    func call(_ name: String, _ args: [String: JSONValue], _ request: HTTPRequest) -> Answer {
        guard let function = Self.functions[name], function.keys.isSubset(of: args.keys),
              Set(args.keys).isSubset(of: function.keys.union(function.optional)) else { return noFunction(name) }
        var newPair: JSONValue?
        let account: Int?
        switch caller(request, newPair: &newPair) {
        case .refused(let answer): return answer
        case .anonymous: account = nil
        case .account(let id): account = id
        }
        if function.authorized && account == nil {
            return refusal(name == "me" ? "unauthorized_to_get_me" : "unauthorized", "Unauthorized", "Unauthorized")
        }
        var answer = run(name, args, account: account ?? 0)
        if let newPair, let access = newPair["access_token"]?.stringValue, let refresh = newPair["refresh_token"]?.stringValue {
            answer.headers += [("X-New-Access-Token", access), ("X-New-Refresh-Token", refresh)]
        }
        return answer
    }

    private func run(_ name: String, _ args: [String: JSONValue], account: Int) -> Answer {
        switch name {
        case "app_config":
            return json(.object([("flags", []), ("available_language_codes", .array(configuration.languages.map { .string($0) })),
                                 ("default_profile_language_code", .string(configuration.languages.first ?? "en"))]))
        case "request_login_code", "request_magic_link":
            guard let email = args["identifier"]?.stringValue?.lowercased(), email.contains("@"), email.utf8.count <= 254 else {
                return refusal("invalid_identifier", "Invalid Identifier", "Please enter a valid email address.")
            }
            if !accounts.contains(where: { $0.email == email }) {
                accounts.append(Account(id: accounts.count + 3, email: email, activeProfile: nil, lastLogin: Self.timestamp(now())))
            }
            var letter = mail[email] ?? .object([])
            if name == "request_login_code" {
                codes[email] = (configuration.loginCode, now())
                letter = .object((letter.objectMembers.filter { $0.0 != "code" }) + [("code", .string(configuration.loginCode))])
            } else {
                let token = random.hex(21) + "x"
                magicTokens[token] = email
                letter = .object((letter.objectMembers.filter { $0.0 != "magic_token" }) + [("magic_token", .string(token))])
            }
            mail[email] = letter
            return json(["success": true])
        case "login_with_code":
            let email = args["identifier"]?.stringValue?.lowercased() ?? ""
            guard let sent = codes[email], sent.code == args["code"]?.stringValue, now() - sent.sent <= 300,
                  let account = accounts.first(where: { $0.email == email }) else {
                return refusal("invalid_login_code", "Login Failed", "Invalid Login Code")
            }
            codes[email] = nil
            return json(issue(account.id))
        case "login_with_magic_token":
            guard let token = args["token"]?.stringValue, let email = magicTokens.removeValue(forKey: token),
                  let account = accounts.first(where: { $0.email == email }) else {
                return refusal("invalid_magic_link", "Login Failed", "Invalid Magic Link")
            }
            return json(issue(account.id))
        case "refresh_tokens":
            guard let value = args["refresh_token"]?.stringValue else { return refusal("missing_refresh_token", "Refresh Failed", "Missing Refresh Token") }
            guard value.hasPrefix("sim.") else {
                return error(400, "22021", "invalid byte sequence for encoding \"UTF8\": 0x00", nil)
            }
            guard let token = tokens[value], !configuration.badRefresh, token.expires > now() else {
                return refusal("token_invalid", "Refresh Failed", "Invalid Refresh Token")
            }
            guard token.refresh else { return refusal("wrong_token_use", "Refresh Failed", "Wrong Token Use") }
            return json(issue(token.account))
        case "me":
            guard let me = accounts.first(where: { $0.id == account }) else { return refusal("unauthorized_to_get_me", "Unauthorized", "Unauthorized") }
            let active: JSONValue = me.activeProfile.flatMap { id in profiles.first { $0.id == id } }.map {
                .object([("account_id", .int($0.account)), ("profile_id", .int($0.id)), ("language_code", .string($0.language))])
            } ?? .null
            return json(.object([("account", .object([("email", .string(me.email)), ("flags", []), ("account_id", .int(me.id)), ("account_role", "user"),
                                                      ("phone_number", .null), ("last_login_at", .string(me.lastLogin))])),
                                 ("active_profile", active)]))
        case "set_active_profile":
            guard args["account_id"]?.intValue == account, let index = accounts.firstIndex(where: { $0.id == account }) else {
                return refusal("unauthorized_to_set_active_profile", "Unauthorized", "Unauthorized")
            }
            guard let language = args["language_code"]?.stringValue, configuration.languages.contains(language) else {
                return error(400, "23514", "value for domain language_code violates check constraint \"language_code_check\"", nil)
            }
            let profile = profiles.first { $0.account == account && $0.language == language }?.id ?? {
                profiles.append(Profile(id: profiles.count + 1, account: account, language: language))
                for _ in 0..<configuration.extraRecordings {
                    files.append(File(id: files.count + 1, bytes: nil, duration: "3", created: Self.timestamp(now())))
                    recordings.append(Recording(id: recordings.count + 1, profile: profiles.count, cue: 10, file: files.count, created: Self.timestamp(now())))
                }
                return profiles.count
            }()
            accounts[index].activeProfile = profile
            return json(.object([("account_id", .int(account)), ("created_at", .string(Self.timestamp(now()))), ("profile_id", .int(profile)),
                                 ("account_active_profile_id", .int(profile))]))
        case "get_cues", "shuffle_cues":
            guard let index = profileIndex(args["profile_id"], account: account) else { return refusal("profile_not_found", "Not Found", "Profile Not Found") }
            let count = min(100, max(1, args["count"]?.intValue ?? 10))
            if name == "shuffle_cues" || profiles[index].batch.isEmpty {
                var ids = ChatterboxSeed.cues.map(\.id).filter { !profiles[index].batch.contains($0) }
                if ids.count < count { ids = ChatterboxSeed.cues.map(\.id) }
                ids.shuffle(using: &random)
                profiles[index].batch = Array(ids.prefix(count))
            }
            return json(.array(profiles[index].batch.map(cue)))
        case "get_cue_for_profile":
            guard let index = profileIndex(args["profile_id"], account: account) else { return refusal("profile_not_found", "Not Found", "Profile Not Found") }
            guard let id = args["cue_id"]?.intValue, ChatterboxSeed.cues.contains(where: { $0.id == id }) else {
                return refusal("cue_not_found_or_not_published", "Not Found", "Cue Not Found")
            }
            let mine = recordings.filter { $0.profile == profiles[index].id && $0.cue == id }.reversed()
            var value = cue(id)
            value = .object(value.objectMembers + [("recordings", .array(mine.map { recording($0, withCue: false) }))])
            return json(.object([("cue", value)] + fileLists(mine.map(\.file))))
        case "get_profile_recording_history":
            guard let index = profileIndex(args["profile_id"], account: account) else { return refusal("profile_not_found", "Not Found", "Profile Not Found") }
            let mine = Array(recordings.filter { $0.profile == profiles[index].id }.reversed())
            let lists = fileLists(mine.map(\.file))
            return json(.object([("recordings", .array(mine.map { recording($0, withCue: true) }))] + (mine.isEmpty ? [("files", [])] : lists)))
        case "create_recording_upload_intent":
            guard let index = profileIndex(args["profile_id"], account: account) else { return refusal("profile_not_found", "Not Found", "Profile Not Found") }
            guard let mime = args["mime_type"]?.stringValue, mime == "audio/mp4" else {
                if args["mime_type"]?.stringValue?.hasPrefix("image/") == true {
                    return refusal("invalid_mime_type_for_recording", "Invalid Mime Type", "Invalid Mime Type")
                }
                return error(400, "23514", "value for domain files.mime_type violates check constraint \"mime_type_check\"", nil)
            }
            guard let cue = args["cue_id"]?.intValue, ChatterboxSeed.cues.contains(where: { $0.id == cue }) else {
                return refusal("cue_not_found_or_not_published", "Not Found", "Cue Not Found")
            }
            let key = "user-recordings/p-\(profiles[index].id)-c-\(cue)-t-\(Int(now())).m4a"
            guard objectKeys.insert(key).inserted else {
                return error(409, "23505", "duplicate key value violates unique constraint \"upload_intent_object_key_key\"", "Key (object_key)=(\(key)) already exists.")
            }
            let intent = Intent(id: intents.count + 1, profile: profiles[index].id, cue: cue, expires: now() + 900, file: nil)
            intents.append(intent)
            return json(.object([("upload_intent_id", .int(intent.id)), ("upload_url", .string(filesURL("put", intent.id)))]))
        case "complete_recording_upload":
            guard let id = args["upload_intent_id"]?.intValue, let index = intents.firstIndex(where: { $0.id == id }),
                  profiles.contains(where: { $0.id == intents[index].profile && $0.account == account }) else {
                return refusal("upload_intent_not_found", "Not Found", "Upload Intent Not Found")
            }
            // Nothing checks that the PUT happened (trace 54); completing twice is the same file.
            let file: Int
            if let existing = intents[index].file { file = existing } else {
                file = files.count + 1
                files.append(File(id: file, bytes: nil, duration: nil, created: Self.timestamp(now())))
                intents[index].file = file
            }
            files[file - 1].duration = args["metadata"]?["duration"]?.stringValue
            if !recordings.contains(where: { $0.file == file }) {
                recordings.append(Recording(id: recordings.count + 1, profile: intents[index].profile, cue: intents[index].cue, file: file,
                                            created: files[file - 1].created))
            }
            return json(.object([("file", fileValue(file)), ("success", true)] + fileLists([file])))
        case "request_recording_transcription", "request_recording_evaluation":
            guard let id = args["profile_cue_recording_id"]?.intValue, let index = recordings.firstIndex(where: { $0.id == id }),
                  profiles.contains(where: { $0.id == recordings[index].profile && $0.account == account }) else {
                return refusal("recording_not_found", "Not Found", "Recording Not Found")
            }
            return name == "request_recording_transcription" ? transcription(index) : evaluation(index)
        case "update_cue_stage":
            return refusal("unauthorized_to_update_cue_stage", "Unauthorized", "Unauthorized")
        default:
            return noFunction(name)
        }
    }

    private func transcription(_ index: Int) -> Answer {
        settle(index)
        if recordings[index].transcript != nil { return json(["status": "already_transcribed"]) }
        if recordings[index].transcriptionStarted != nil { return json(["status": "in_progress"]) }
        recordings[index].transcriptionStarted = now()
        recordings[index].transcriptionFails = configuration.providerFailures > 0
        if configuration.providerFailures > 0 { configuration.providerFailures -= 1 }
        return json(.object([("status", "started"), ("recording_transcription_task_id", .int(recordings[index].id))]))
    }

    private func evaluation(_ index: Int) -> Answer {
        settle(index)
        guard recordings[index].transcript != nil else { return json(["status": "transcript_not_ready"]) }
        if recordings[index].evaluation != nil { return json(["status": "already_evaluated"]) }
        if recordings[index].evaluationStarted != nil { return json(["status": "in_progress"]) }
        recordings[index].evaluationStarted = now()
        return json(.object([("status", "started"), ("openai_response_task_id", .int(recordings[index].id)),
                             ("recording_evaluation_task_id", .int(recordings[index].id))]))
    }

    /// Tasks whose time has come finish: ready, or (a failing provider) back to none.
    private func settle(_ index: Int) {
        let time = now()
        if let started = recordings[index].transcriptionStarted, recordings[index].transcript == nil, time - started >= configuration.transcriptionSeconds {
            recordings[index].transcriptionStarted = nil
            if !recordings[index].transcriptionFails {
                let bytes = files[recordings[index].file - 1].bytes
                recordings[index].transcript = bytes == nil ? nil : ChatterboxSeed.transcript
            }
        }
        if let started = recordings[index].evaluationStarted, recordings[index].evaluation == nil, time - started >= configuration.evaluationSeconds {
            recordings[index].evaluation = ChatterboxSeed.evaluation(createdAt: Self.timestamp(time), padding: configuration.evaluationPadding)
        }
    }

    private func profileIndex(_ value: JSONValue?, account: Int) -> Int? {
        guard let id = value?.intValue else { return nil }
        return profiles.firstIndex { $0.id == id && $0.account == account }
    }

    private func cue(_ id: Int) -> JSONValue {
        let title = ChatterboxSeed.cues.first { $0.id == id }?.title ?? ""
        let details = configuration.hostileCueDetails ? "<script>alert('cue')</script>**Bold** <img src=x onerror=alert(1)>" : ""
        let created = "2026-11-25T06:28:13.884747+00:00"
        return .object([("stage", "published"), ("cue_id", .int(id)),
                        ("content", .object([("title", .string(title)), ("cue_id", .int(id)), ("details", .string(details)), ("created_at", .string(created)),
                                             ("language_code", "en"), ("cue_content_id", .int(id * 5))])),
                        ("created_at", .string(created)), ("created_by", 1)])
    }

    private func fileValue(_ id: Int) -> JSONValue {
        let file = files[id - 1]
        return .object([("created_at", .string(file.created)), ("file_id", .int(id)),
                        ("metadata", file.duration.map { .object([("duration", .string($0))]) } ?? .object([])), ("mime_type", "audio/mp4")])
    }

    /// `files` and `processed_files` (fresh download URLs, newest file first as the gateway
    /// orders them: not the recordings' order).
    private func fileLists(_ ids: [Int]) -> [(String, JSONValue)] {
        [("files", .array(ids.map { .int($0) })),
         ("processed_files", .array(ids.sorted().map { .object([("file_id", .int($0)), ("url", .string(filesURL("get", $0)))]) }))]
    }

    private func recording(_ recording: Recording, withCue: Bool) -> JSONValue {
        guard let index = recordings.firstIndex(where: { $0.id == recording.id }) else { return .null }
        settle(index)
        let r = recordings[index]
        let transcribing = r.transcriptionStarted != nil
        let evaluating = r.evaluationStarted != nil && r.evaluation == nil
        let report: JSONValue = .object([
            ("evaluation", .object([("result", r.evaluation ?? .null),
                                    ("status", .string(r.evaluation != nil ? "ready" : evaluating ? "processing" : "none"))])),
            ("status", .string(r.transcript != nil ? "ready" : transcribing ? "processing" : "none")),
            ("transcript", .optional(r.transcript)),
        ])
        var members: [(String, JSONValue)] = [("created_at", .string(r.created))]
        if withCue { members.append(("cue", cue(r.cue))) }
        members += [("cue_id", .int(r.cue)), ("file", fileValue(r.file)), ("file_id", .int(r.file)), ("profile_cue_recording_id", .int(r.id)),
                    ("profile_id", .int(r.profile)), ("report", report)]
        return .object(members)
    }
}

extension JSONValue {
    var objectMembers: [(String, JSONValue)] {
        if case .object(let members) = self { return members }
        return []
    }
}
