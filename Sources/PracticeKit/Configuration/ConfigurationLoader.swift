import AudioKernel
import FoundationEssentials
import Glibc
import PracticeNet
import PracticeProtocol
import PracticeSupport

/// Resolves ``DaemonConfiguration``: defaults, then the config file, then `PRACTICED_*`
/// environment variables, then command-line flags; each layer overrides the one before.
///
/// The file is `key = value` lines (`#` starts a comment line; a value may be in double
/// quotes; blank lines are skipped), with the keys `practiced --help` lists:
///
///     # /etc/practiced/practiced.conf
///     backend.url = https://practice.example.org
///     capture.device = alsa:plughw:1,0
///     socket.group = kiosk
///
/// A key that does not exist or a value that is not allowed is an error naming the key,
/// the value, where it came from and what is allowed.
public struct ConfigurationLoader: Sendable {
    public static let defaultFile = "/etc/practiced/practiced.conf"
    /// The largest configuration file read: far above any real one (the sample is 8 KiB).
    static let maximumFileBytes = 1 << 20

    /// What the command line asked for besides settings.
    public enum Action: Equatable, Sendable {
        case run
        case help
        case version
        case checkConfig
        /// Print the protocol's JSON Schema (docs/protocol/practiced-1.schema.json).
        case printSchema
        /// Print the generated protocol reference (docs/protocol/reference.md).
        case printProtocolReference
        /// Print the protocol's names as a JavaScript module (samples/kiosk-ui/js/protocol.js).
        case printProtocolModule
    }

    public struct Result: Equatable, Sendable {
        public var configuration: DaemonConfiguration
        public var action: Action
        /// The file read (nil when none exists at the default path).
        public var file: String?
        /// The flags and file, so that SIGHUP can read the same sources again.
        public var arguments: [String]
    }

    public var environment: [String: String]

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    /// Reads every layer. `arguments` excludes the program name.
    public func load(arguments: [String]) throws(ConfigurationError) -> Result {
        var action = Action.run
        var file: String? = environment["PRACTICED_CONFIG"]
        var explicitFile = file != nil
        var flagValues: [(ConfigurationKey, String, String)] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            switch argument {
            case "--help", "-h": action = .help; continue
            case "--version": action = .version; continue
            case "--check-config": action = .checkConfig; continue
            case "--print-schema": action = .printSchema; continue
            case "--print-protocol-reference": action = .printProtocolReference; continue
            case "--print-protocol-module": action = .printProtocolModule; continue
            default: break
            }
            var name = argument
            var value: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                value = String(argument[argument.index(after: equals)...])
            }
            func next() throws(ConfigurationError) -> String {
                if let value { return value }
                guard index < arguments.count else {
                    throw ConfigurationError(key: name, value: "", source: "command line", allowed: "a value after \(name)")
                }
                index += 1
                return arguments[index - 1]
            }
            if name == "--config" {
                file = try next()
                explicitFile = true
                continue
            }
            guard let key = ConfigurationKey.all.first(where: { $0.flag == name }) else {
                throw ConfigurationError(key: argument, value: "", source: "command line",
                                         allowed: "an option of `practiced --help`")
            }
            flagValues.append((key, try next(), "command line \(name)"))
        }

        var configuration = DaemonConfiguration(environment: environment)
        // The file.
        let path = file ?? Self.defaultFile
        var readFile: String?
        if FileManager.default.fileExists(atPath: path) || explicitFile {
            // Not FileManager.contents: this reads /dev/null and pipes too, and stops at a
            // size no configuration reaches (a path to /dev/zero is refused, not read for ever).
            guard let bytes = try? FileReader.read(path, upTo: Self.maximumFileBytes + 1), bytes.count <= Self.maximumFileBytes,
                  let text = String(validating: bytes, as: UTF8.self) else {
                throw ConfigurationError(key: "config file", value: path, source: "command line",
                                         allowed: "a readable UTF-8 file of at most 1 MiB")
            }
            try Self.apply(file: text, path: path, to: &configuration)
            readFile = path
        }
        // The environment, in the keys' order (deterministic).
        for key in ConfigurationKey.all {
            if let value = environment[key.environmentName] {
                try Self.set(key, value, source: "environment \(key.environmentName)", in: &configuration)
            }
        }
        for (key, value, source) in flagValues { try Self.set(key, value, source: source, in: &configuration) }
        // One learner's identity on a kiosk every stranger uses would show each the last one's
        // profile: refused rather than quietly ignored.
        if configuration.visitIdentity == .shared, let id = configuration.userID {
            throw ConfigurationError(key: "user.id", value: id, source: "configuration",
                                     allowed: "no value while kiosk.visits = shared (each visit is a new learner); kiosk.visits = personal keeps one learner's id")
        }
        return Result(configuration: configuration, action: action, file: readFile, arguments: arguments)
    }

    static func apply(file text: String, path: String, to configuration: inout DaemonConfiguration) throws(ConfigurationError) {
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmed()
            if line.isEmpty || line.hasPrefix("#") { continue }
            let source = "\(path):\(number + 1)"
            guard let equals = line.firstIndex(of: "=") else {
                throw ConfigurationError(key: line, value: "", source: source, allowed: "a line `key = value`")
            }
            let name = line[..<equals].trimmed(newlines: false)
            var value = line[line.index(after: equals)...].trimmed(newlines: false)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            guard let key = ConfigurationKey.all.first(where: { $0.name == name }) else {
                throw ConfigurationError(key: name, value: value, source: source, allowed: "a key of `practiced --help`")
            }
            try set(key, value, source: source, in: &configuration)
        }
    }

    private static func set(_ key: ConfigurationKey, _ value: String, source: String,
                            in configuration: inout DaemonConfiguration) throws(ConfigurationError) {
        guard key.apply(&configuration, value) else {
            throw ConfigurationError(key: key.name, value: value, source: source, allowed: key.allowed)
        }
    }

    /// The configuration as `key = value` lines (`--check-config`, `config.get`).
    public static func describe(_ configuration: DaemonConfiguration) -> [(key: String, value: String)] {
        ConfigurationKey.all.map { ($0.name, $0.current(configuration)) }
    }

    /// `practiced --help`.
    public static var usage: String {
        var text = """
            usage: practiced [--config FILE] [--KEY VALUE ...] [--check-config | --help | --version | --print-schema]
              The audio and conversation daemon of a speaking-practice kiosk.

              --config FILE     the config file (default \(defaultFile); also PRACTICED_CONFIG)
              --check-config    resolve the configuration, print it, and exit (0 when valid)
              --version         print the version
              --print-schema    print the JSON Schema of the control protocol, practiced/1
              --print-protocol-reference
                                print the protocol reference generated from the same types (Markdown)
              --print-protocol-module
                                print the protocol's command, event and topic names as a JavaScript module

            settings (file key; environment variable; flag), each overriding the one before:

            """
        for key in ConfigurationKey.all {
            text += "  \(key.name)\n      \(key.help); \(key.allowed)\n      \(key.environmentName), \(key.flag) VALUE\n"
        }
        return text
    }

    /// The user id to use: the configured one, or the one generated on the first run and
    /// kept in `state.dir/user-id` (a 9-digit number, the form newer servers use).
    /// A 9-digit learner id, drawn anew: the kiosk's own once (``userID(for:)``), or a shared
    /// kiosk's visitor's at each visit.
    static func newUserID() -> String { String(UInt64.random(in: 100_000_000...999_999_999)) }

    public static func userID(for configuration: DaemonConfiguration) throws -> String {
        if let id = configuration.userID { return id }
        let path = FilePaths.join(configuration.stateDirectory, "user-id")
        if let data = FileManager.default.contents(atPath: path),
           let id = String(data: data, encoding: .utf8)?.trimmed(), !id.isEmpty {
            return id
        }
        try FileManager.default.createDirectory(atPath: configuration.stateDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o750])
        let id = newUserID()
        // Written under a temporary name, then renamed: a crash never leaves half an id.
        let temporary = path + ".tmp"
        try Data((id + "\n").utf8).write(to: URL(fileURLWithPath: temporary))
        guard rename(temporary, path) == 0 else { throw Errno.current.failure("renaming \(temporary) to \(path)") }
        return id
    }
}

extension ConfigurationListing {
    /// Every key of `configuration` with its value, in the configuration table's order.
    public init(_ configuration: DaemonConfiguration) { self.init(entries: ConfigurationLoader.describe(configuration)) }
}
