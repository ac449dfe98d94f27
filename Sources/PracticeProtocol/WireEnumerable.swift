import FoundationEssentials

/// A string enumeration on the wire: the schema lists its values, and an argument outside
/// them is refused with the list.
public protocol WireEnumerable {
    static var wireValues: [String] { get }
}

extension WireEnumerable where Self: CaseIterable & RawRepresentable, RawValue == String {
    public static var wireValues: [String] { allCases.map(\.rawValue) }
}

extension SessionMode: WireEnumerable, CaseIterable {
    public static var allCases: [SessionMode] { [.conversation, .review] }
}
extension SessionStage: WireEnumerable, Codable {}
extension ControlErrorCode: WireEnumerable, Codable {}
extension ReplyOutcome: WireEnumerable, Codable {}

/// "a, b or c", as the error messages list choices.
func choices(_ values: [String]) -> String {
    guard values.count > 1 else { return values.first ?? "" }
    return values.dropLast().joined(separator: ", ") + " or " + values.last!
}
