/// A configuration value that is not allowed; start-up stops with this message.
public struct ConfigurationError: Error, Equatable, CustomStringConvertible {
    public var key: String
    public var value: String
    public var source: String
    public var allowed: String

    public var description: String {
        allowed.isEmpty ? "\(source): \(key)" : "invalid \(key) = '\(value)' (\(source)): allowed is \(allowed)"
    }
}
