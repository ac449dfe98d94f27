import FoundationEssentials

/// The protocol's names for JavaScript clients: `samples/kiosk-ui/js/protocol.js` is this
/// text (`practiced --print-protocol-module`), checked for drift like the schema, so that the
/// learner UI spells no command, event or topic by hand. A name the daemon renames is then a
/// stale module, found by the drift test, instead of a page that silently stops reacting.
public enum ProtocolJavaScriptModule {
    public static var text: String {
        var lines = [
            "// practiced/1's names, generated from the daemon's types by",
            "// `practiced --print-protocol-module > samples/kiosk-ui/js/protocol.js`: do not edit.",
            "// Each is the wire name, keyed by the name of its type in the daemon (Command.X, Event.X);",
            "// docs/protocol/reference.md says what each carries.",
            "",
            "export const PROTOCOL = \"practiced/1\";",
            "",
            "/** The commands a client may send. */",
            "export const Command = Object.freeze({",
        ]
        lines += ProtocolCatalog.commands.map { "  \(key(of: $0)): \"\($0.name)\"," }
        lines += ["});", "", "/** The events the daemon sends, by topic. */", "export const Event = Object.freeze({"]
        lines += ProtocolCatalog.events.map { "  \(key(of: $0)): \"\($0.name)\", // \($0.topic.rawValue)" }
        lines += ["});", "", "/** The topics a client subscribes to. */", "export const Topic = Object.freeze({"]
        lines += EventTopic.allCases.filter { $0 != .state }.map { "  \($0.rawValue): \"\($0.rawValue)\"," }
        lines += ["});", ""]
        return lines.joined(separator: "\n")
    }

    /// The type's own name (`SessionStart` for `Command.SessionStart`).
    private static func key(of type: Any.Type) -> String {
        String(describing: type).split(separator: ".").last.map(String.init) ?? String(describing: type)
    }
}
