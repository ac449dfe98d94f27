import Foundation
import PracticeKit
import PracticeProtocol
import TestSupport
import XCTest

/// The man pages (docs/man) and the bash completion (samples/completion) against the
/// programs they describe, so that they cannot drift: every configuration key with its
/// default, environment variable and flag; every option of `practiced --help`; every
/// command and option of `practicectl --help`. The pages are read as `man` renders them
/// (roff escapes resolved), and `man --warnings` must have nothing to say about them.
final class ManualPageTests: XCTestCase {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    static func page(_ name: String) -> String { "\(repository)/docs/man/\(name)" }
    static let completion = "\(repository)/samples/completion/practicectl.bash"

    /// In the C locale, so that `man` renders ASCII.
    private func output(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, stdout: String, stderr: String) {
        try DaemonHarness.run(executable, arguments, environment: ["LC_ALL": "C"].merging(environment) { $1 }, timeout: 60)
    }

    /// The page as text, one line per output line, wide enough that no entry wraps
    /// mid-word into the next one's tag.
    private func rendered(_ name: String) throws -> [String] {
        let (status, text, errors) = try output("/usr/bin/man", ["-l", Self.page(name)], environment: ["MANWIDTH": "250", "MAN_KEEP_FORMATTING": ""])
        XCTAssertEqual(status, 0, errors)
        return text.components(separatedBy: "\n")
    }

    /// The lines of section `name` (a heading at column 0) up to the next section.
    private func section(_ name: String, of lines: [String]) -> [String] {
        guard let start = lines.firstIndex(of: name) else { return [] }
        let rest = lines[(start + 1)...]
        let end = rest.firstIndex { !$0.isEmpty && !$0.hasPrefix(" ") } ?? lines.endIndex
        return Array(lines[(start + 1)..<end])
    }

    /// The entries of a section: each tag (indented 7) with its paragraph (indented deeper),
    /// the paragraph's blanks collapsed.
    private func entries(_ lines: [String]) -> [(tag: String, text: String)] {
        var result: [(tag: String, text: String)] = []
        for (index, line) in lines.enumerated() where !line.trimmingCharacters(in: .whitespaces).isEmpty {
            let indent = line.prefix { $0 == " " }.count
            if indent == 7 {
                // A tag narrower than the indent has its paragraph on the same line, from
                // column 14 on (the page is rendered wide: that paragraph has no second
                // line); a wider one has it on the lines after.
                let characters = Array(line)
                let continued = index + 1 < lines.count && lines[index + 1].hasPrefix(String(repeating: " ", count: 14))
                if characters.count > 14, characters[13] == " ", !continued {
                    result.append((String(characters[7..<13]).trimmingCharacters(in: .whitespaces), String(characters[14...])))
                } else {
                    result.append((line.trimmingCharacters(in: .whitespaces), ""))
                }
            } else if indent > 7, !result.isEmpty {
                result[result.count - 1].text += " " + line.trimmingCharacters(in: .whitespaces)
            }
        }
        return result.map { ($0.tag, $0.text.split(separator: " ").joined(separator: " ")) }
    }

    /// `practiced --help`'s settings: name, purpose; allowed, variable, flag.
    private func configurationKeys() throws -> [(name: String, description: String, environment: String, flag: String)] {
        let help = try output(DaemonHarness.practiced, ["--help"]).stdout.components(separatedBy: "\n")
        let start = try XCTUnwrap(help.firstIndex { $0.hasPrefix("settings (") }) + 1
        var keys: [(String, String, String, String)] = []
        var index = start
        while index + 2 < help.count, help[index].hasPrefix("  "), !help[index].hasPrefix("   ") {
            let names = help[index + 2].trimmingCharacters(in: .whitespaces).components(separatedBy: ", ")
            keys.append((help[index].trimmingCharacters(in: .whitespaces), help[index + 1].trimmingCharacters(in: .whitespaces),
                         names[0], names[1].replacingOccurrences(of: " VALUE", with: "")))
            index += 3
        }
        return keys
    }

    func testConfigurationPageGivesEveryKeyWithItsDefaultVariableAndFlag() throws {
        let keys = try configurationKeys()
        XCTAssertGreaterThan(keys.count, 30)
        // The system service's defaults, which the page gives, whoever runs the test.
        let check = try output(DaemonHarness.practiced, ["--config", "/dev/null", "--check-config"],
                               environment: ["RUNTIME_DIRECTORY": "/run/practiced", "STATE_DIRECTORY": "/var/lib/practiced"])
        XCTAssertEqual(check.status, 0, check.stderr)
        var defaults: [String: String] = [:]
        for line in check.stdout.components(separatedBy: "\n") where !line.hasPrefix("#") {
            guard let range = line.range(of: " = ") else { continue }
            defaults[String(line[..<range.lowerBound])] = String(line[range.upperBound...])
        }
        let page = entries(section("KEYS", of: try rendered("practiced.conf.5")))
        XCTAssertEqual(page.map(\.tag).sorted(), keys.map(\.name).sorted(), "practiced.conf(5) KEYS against practiced --help")
        for key in keys {
            guard let entry = page.first(where: { $0.tag == key.name }) else { continue }
            let purpose = key.description.components(separatedBy: "; ")[0]
            let allowed = key.description.dropFirst(purpose.count + 2)
            XCTAssertTrue(entry.text.lowercased().hasPrefix(purpose.lowercased() + "."), "\(key.name): purpose '\(purpose)' in: \(entry.text)")
            // Long values carry break points (`\:`) in the page: compared without blanks.
            XCTAssertTrue(entry.text.replacingOccurrences(of: " ", with: "").contains("Allowed:\(allowed.replacingOccurrences(of: " ", with: ""))."),
                          "\(key.name): allowed '\(allowed)' in: \(entry.text)")
            let value = try XCTUnwrap(defaults[key.name], key.name)
            XCTAssertTrue(entry.text.contains("Default: \(value.isEmpty ? "none" : value)."), "\(key.name): default '\(value)' in: \(entry.text)")
            XCTAssertTrue(entry.text.contains("Environment \(key.environment), flag \(key.flag)."), "\(key.name): \(key.environment), \(key.flag) in: \(entry.text)")
        }
        // The example's keys are real ones, and the example is a valid configuration.
        let example = section("EXAMPLE", of: try rendered("practiced.conf.5")).map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.contains(" = ") }
        XCTAssertGreaterThan(example.count, 3)
        let file = "/tmp/practiced-man-example-\(UUID().uuidString).conf"
        defer { unlink(file) }
        try example.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let checked = try output(DaemonHarness.practiced, ["--config", file, "--check-config"])
        XCTAssertEqual(checked.status, 0, "the page's example: \(checked.stderr)")
    }

    func testDaemonPageGivesEveryOptionOfHelp() throws {
        let help = try output(DaemonHarness.practiced, ["--help"]).stdout
        let settings = try XCTUnwrap(help.range(of: "settings ("))
        let options = Set(options(in: String(help[..<settings.lowerBound])))
        XCTAssertTrue(options.isSuperset(of: ["--config", "--check-config", "--version", "--help", "--print-schema"]), "\(options)")
        let lines = try rendered("practiced.8")
        let tags = entries(section("OPTIONS", of: lines)).map(\.tag)
        let documented = Set(tags.flatMap { $0.components(separatedBy: ", ") }.map { $0.components(separatedBy: " ")[0] }).subtracting(["-h"])
        XCTAssertEqual(documented, options, "practiced(8) OPTIONS against practiced --help")
        // The exit statuses the page gives are the ones the daemon uses for these cases.
        XCTAssertEqual(Set(entries(section("EXIT STATUS", of: lines)).map(\.tag)), ["0", "1", "75", "78"])
        XCTAssertEqual(try output(DaemonHarness.practiced, ["--audio-period-ms", "1", "--check-config", "--config", "/dev/null"]).status, 78)
    }

    /// `--name` words of a text, `--KEY` (the settings' placeholder) included.
    private func options(in text: String) -> [String] {
        let regex = try! NSRegularExpression(pattern: "--[A-Za-z][A-Za-z-]*")
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { String(text[Range($0.range, in: text)!]) }
    }

    /// A usage line's command names: "profile [evaluate | goal [TEXT]]" → profile;
    /// "talk | done | cancel" → talk, done, cancel.
    private func commandNames(_ synopsis: String) -> [String] {
        var text = synopsis
        while let range = text.range(of: "\\[[^\\[\\]]*\\]", options: .regularExpression) { text.removeSubrange(range) }
        return text.components(separatedBy: " | ").compactMap { $0.split(separator: " ").first.map(String.init) }
    }

    /// `practicectl --help`: its commands, and its options.
    private func controlHelp() throws -> (commands: [String], options: Set<String>) {
        let help = try output(DaemonHarness.practicectl, ["--help"]).stdout.components(separatedBy: "\n")
        let start = try XCTUnwrap(help.firstIndex(of: "commands:")) + 1
        var commands: [String] = []
        for line in help[start...] {
            if line.isEmpty { break }
            guard line.hasPrefix("  "), let first = line.dropFirst(2).first, first.isLetter else { continue }
            let synopsis = line.dropFirst(2).components(separatedBy: "  ")[0]
            commands += commandNames(synopsis)
        }
        return (commands, Set(options(in: help[0])).union(["--help"]))
    }

    func testControlPageGivesEveryCommandAndOptionOfHelp() throws {
        let (commands, options) = try controlHelp()
        XCTAssertGreaterThan(commands.count, 25)
        XCTAssertTrue(commands.contains("review-mode") && commands.contains("cancel") && commands.contains("spool"), "\(commands)")
        let lines = try rendered("practicectl.1")
        let documented = entries(section("COMMANDS", of: lines)).flatMap { commandNames($0.tag) }
        XCTAssertEqual(documented.sorted(), commands.sorted(), "practicectl(1) COMMANDS against practicectl --help")
        let documentedOptions = Set(entries(section("OPTIONS", of: lines)).map(\.tag).flatMap { $0.components(separatedBy: ", ") }
            .map { $0.components(separatedBy: " ")[0] }).subtracting(["-h"])
        XCTAssertEqual(documentedOptions, options, "practicectl(1) OPTIONS against practicectl --help")
        // Every command the page names is one practicectl takes (a usage error is exit 64).
        let unknown = try output(DaemonHarness.practicectl, ["--socket", "/nonexistent/socket", "no-such-command"])
        XCTAssertEqual(unknown.status, 64)
        for command in documented {
            let result = try output(DaemonHarness.practicectl, ["--socket", "/nonexistent/socket", command] + (["start", "play"].contains(command) ? ["x"] : []))
            XCTAssertNotEqual(result.status == 64 && result.stderr.contains("unknown command"), true, "\(command): \(result.stderr)")
        }
    }

    /// The kiosk UI's launcher (a shell script in samples/kiosk-ui): its options and the
    /// variables it reads, as its `--help` gives them.
    func testKioskUIPageGivesEveryOptionAndVariableOfHelp() throws {
        let launcher = "\(Self.repository)/samples/kiosk-ui/practiced-kiosk-ui"
        let help = try output("/bin/bash", [launcher, "--help"])
        XCTAssertEqual(help.status, 0, help.stderr)
        XCTAssertFalse(help.stdout.contains("set -euo"), "--help prints the header comment only")
        let usage = try XCTUnwrap(help.stdout.components(separatedBy: "\n").first { $0.contains("practiced-kiosk-ui [") })
        let options = Set(options(in: usage)).union(["--help"])
        XCTAssertEqual(options, ["--port", "--socket", "--ui", "--browser", "--no-browser", "--browser-args", "--help"])
        let lines = try rendered("practiced-kiosk-ui.1")
        let documented = Set(entries(section("OPTIONS", of: lines)).map(\.tag).flatMap { $0.components(separatedBy: ", ") }
            .map { $0.components(separatedBy: " ")[0] }).subtracting(["-h"])
        XCTAssertEqual(documented, options, "practiced-kiosk-ui(1) OPTIONS against its --help")
        let regex = try NSRegularExpression(pattern: "PRACTICED_[A-Z_]+")
        let variables = Set(regex.matches(in: help.stdout, range: NSRange(help.stdout.startIndex..., in: help.stdout))
            .map { String(help.stdout[Range($0.range, in: help.stdout)!]) })
        XCTAssertEqual(variables.count, 6, "\(variables)")
        let environment = Set(entries(section("ENVIRONMENT", of: lines)).map(\.tag))
        XCTAssertEqual(environment, variables.union(["XDG_RUNTIME_DIR"]), "practiced-kiosk-ui(1) ENVIRONMENT against its --help")
        // The script reads every variable it names.
        let script = try String(contentsOfFile: launcher, encoding: .utf8)
        for variable in variables { XCTAssertTrue(script.contains("${\(variable):-"), variable) }
        XCTAssertEqual(try output("/bin/bash", [launcher, "--no-such-option"]).status, 64)
        XCTAssertEqual(try output("/bin/bash", [launcher, "--port", "80a"]).status, 64)
        XCTAssertEqual(try output("/bin/bash", [launcher, "--browser", "firefox"]).status, 64)
        XCTAssertEqual(try output("/bin/bash", [launcher, "--no-browser", "--ui", "/nonexistent"]).status, 66)
    }

    func testPagesFormatWithoutWarnings() throws {
        for name in ["practiced.8", "practicectl.1", "practiced.conf.5", "practiced-kiosk-ui.1"] {
            let (status, text, errors) = try output("/usr/bin/man", ["--warnings", "-l", Self.page(name)], environment: ["MANWIDTH": "80"])
            XCTAssertEqual(status, 0, "\(name): \(errors)")
            XCTAssertEqual(errors, "", "man --warnings on \(name)")
            XCTAssertTrue(text.contains("NAME"), name)
        }
    }

    /// Runs the completion function in bash as readline would for `line` (the cursor at its
    /// end); the candidates, one per line.
    private func complete(_ line: String, socket: String? = nil, directory: String = "/tmp") throws -> [String] {
        var words = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        if line.hasSuffix(" ") { words.append("") }
        let quoted = words.map { "'\($0)'" }.joined(separator: " ")
        let script = """
            source '\(Self.completion)'
            cd '\(directory)'
            COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1); COMP_LINE='\(line)'; COMP_POINT=${#COMP_LINE}
            _practicectl practicectl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        var environment = ["PATH": "\(URL(fileURLWithPath: DaemonHarness.practicectl).deletingLastPathComponent().path):/usr/bin:/bin"]
        if let socket { environment["PRACTICED_SOCKET"] = socket }
        let (status, text, errors) = try output("/bin/bash", ["--norc", "--noprofile", "-c", script], environment: environment)
        XCTAssertEqual(status, 0, errors)
        return text.components(separatedBy: "\n").filter { !$0.isEmpty }.sorted()
    }

    func testBashCompletionCompletesCommandsTopicsAndPaths() throws {
        let (commands, options) = try controlHelp()
        XCTAssertEqual(try complete("practicectl "), commands.sorted())
        XCTAssertEqual(try complete("practicectl --"), options.sorted())
        XCTAssertEqual(try complete("practicectl --json re"), ["replay", "results", "review", "review-mode"])
        XCTAssertEqual(try complete("practicectl events "), ProtocolCatalog.subscribableTopicNames)
        XCTAssertEqual(try complete("practicectl spool "), ["discard", "discard-answer", "retry"])
        XCTAssertEqual(try complete("practicectl cards "), ["shuffle"])
        XCTAssertEqual(try complete("practicectl answer 12 --"), ["--hands-free"])
        XCTAssertEqual(try complete("practicectl signin --"), ["--link"])

        // play: file paths, blanks included, and --mix.
        let directory = DaemonHarness.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for name in ["hello.wav", "hello world.wav", "other.txt"] { _ = FileManager.default.createFile(atPath: "\(directory)/\(name)", contents: Data()) }
        XCTAssertEqual(try complete("practicectl play hel", directory: directory), ["hello world.wav", "hello.wav"])
        XCTAssertEqual(try complete("practicectl play --mix o", directory: directory), ["other.txt"])
        XCTAssertEqual(try complete("practicectl play --", directory: directory), ["--mix"])

        // start: the topics of the running daemon (its backend's), and nothing without one.
        XCTAssertEqual(try complete("practicectl start ", socket: "\(directory)/none.sock"), [])
        let sim = try SimulatorHarness()
        let daemon = try DaemonHarness(backend: sim.baseURL)
        let topics = try daemon.client().request(Command.Topics.self)["topics"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        XCTAssertGreaterThan(topics.count, 1)
        XCTAssertEqual(try complete("practicectl start ", socket: daemon.socketPath), topics.sorted())
        XCTAssertEqual(try complete("practicectl --socket \(daemon.socketPath) start ", socket: "\(directory)/none.sock"), topics.sorted())
        let prefix = String(topics[0].prefix(2))
        XCTAssertEqual(try complete("practicectl start \(prefix)", socket: daemon.socketPath), topics.filter { $0.hasPrefix(prefix) }.sorted())
    }
}
