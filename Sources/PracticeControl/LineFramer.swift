import PracticeProtocol

/// Splits a client's bytes into request lines, however its writes were cut: a line is the
/// bytes before a newline (0x0A), and a partial line is kept until the rest comes. A line
/// longer than the limit, whole or still partial, is an error (the connection is closed
/// after the reply). A value: tested on bytes alone, without a socket.
struct LineFramer {
    let maximumLineBytes: Int
    /// The start of a line whose newline has not come yet.
    private var partial: [UInt8] = []

    init(maximumLineBytes: Int = ControlProtocol.maximumLineBytes) { self.maximumLineBytes = maximumLineBytes }

    /// Bytes of a line still waiting for its newline.
    var partialCount: Int { partial.count }

    enum Outcome: Equatable {
        case fine
        /// A line passed the limit: nothing after it is framed.
        case lineTooLong
    }

    /// Appends the complete lines in `bytes` (the partial one before them first) to
    /// `lines`, and keeps the rest for the next call, while `more()` holds (a connection
    /// stops taking lines once it is closing).
    mutating func frame(_ bytes: ArraySlice<UInt8>, into lines: inout [[UInt8]], while more: () -> Bool = { true }) -> Outcome {
        var start = bytes.startIndex
        while more(), let newline = bytes[start...].firstIndex(of: 0x0A) {
            let line: [UInt8]
            if partial.isEmpty {
                line = Array(bytes[start..<newline])
            } else {
                partial += bytes[start..<newline]
                line = partial
                partial.removeAll(keepingCapacity: true)
            }
            start = newline + 1
            if line.count > maximumLineBytes { return tooLong() }
            lines.append(line)
        }
        guard more() else { return .fine }
        partial += bytes[start...]
        return partial.count > maximumLineBytes ? tooLong() : .fine
    }

    private mutating func tooLong() -> Outcome {
        partial = []
        return .lineTooLong
    }
}
