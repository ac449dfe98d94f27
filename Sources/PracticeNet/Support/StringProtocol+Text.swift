/// The few text operations the daemon took from Foundation's NSString bridge. It links only
/// FoundationEssentials, which has none of them (its resident memory is the reason, see
/// docs/performance.md); each is ASCII-only where the daemon's inputs are (configuration
/// keys, HTTP field names, numbers). Package-wide: HTTP needs them here, configuration and
/// the backends' clients above.
extension StringProtocol {
    /// Without leading and trailing spaces and tabs (and line ends with `newlines`).
    package func trimmed(newlines: Bool = true) -> String {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" || (newlines && $0.isNewline) }
        guard let first = firstIndex(where: { !isBlank($0) }), let last = lastIndex(where: { !isBlank($0) }) else { return "" }
        return String(self[first...last])
    }

    /// Whether the two are equal ignoring ASCII case (HTTP field names).
    package func equalsIgnoringASCIICase<Other: StringProtocol>(_ other: Other) -> Bool {
        let a = utf8, b = other.utf8
        guard a.count == b.count else { return false }
        return zip(a, b).allSatisfy { x, y in
            x == y || (x | 0x20 == y | 0x20 && (x | 0x20) >= 0x61 && (x | 0x20) <= 0x7A)
        }
    }
}
